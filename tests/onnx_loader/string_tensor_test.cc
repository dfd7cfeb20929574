// String tensors through the loader: TensorProto string_data both ways, .pb files, numpy's
// unicode .npy arrays ('<U', UTF-32), and a model with a string input run end to end.
#include <doctest/doctest.h>

#include <cstring>

#include "onnx_loader/model.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/proto_convert.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"

using namespace oat;
using namespace oat_test;
using namespace oat::onnx_loader;

namespace {

using S = std::vector<std::string>;
constexpr int kString = onnx::TensorProto_DataType_STRING;

S svec(const Tensor& t) {
  REQUIRE(t.dtype() == DType::String);
  return S(t.data<std::string>(), t.data<std::string>() + t.numel());
}

// A numpy '<U{width}' .npy file of `rows` (UTF-32LE code points, zero-padded), as np.save writes.
std::string npy_unicode(size_t width, const std::vector<std::u32string>& rows) {
  std::string data;
  for (const auto& r : rows)
    for (size_t k = 0; k < width; ++k) {
      const uint32_t c = k < r.size() ? static_cast<uint32_t>(r[k]) : 0;
      data.append(reinterpret_cast<const char*>(&c), 4);
    }
  return npy_bytes("{'descr': '<U" + std::to_string(width) +
                       "', 'fortran_order': False, 'shape': (" + std::to_string(rows.size()) +
                       ",), }",
                   data);
}

}  // namespace

TEST_CASE("string_data: read into a string tensor, written back, sizes checked") {
  onnx::TensorProto p;
  p.set_name("words");
  p.set_data_type(kString);
  p.add_dims(3);
  for (const char* s : {"", "café", "a\0b"}) p.add_string_data(s);
  p.set_string_data(2, std::string("a\0b", 3));  // bytes, not C strings
  const Tensor t = tensor_from_proto(p, "");
  CHECK(t.shape() == Shape{3});
  CHECK(svec(t) == S{"", "café", std::string("a\0b", 3)});
  onnx::TensorProto back;
  tensor_to_proto(t, "words", &back);
  CHECK(back.data_type() == kString);
  CHECK(!back.has_raw_data());
  REQUIRE(back.string_data_size() == 3);
  CHECK(back.string_data(1) == "café");
  CHECK(back.string_data(2) == std::string("a\0b", 3));
  // The wrong count, and raw_data (which cannot hold strings), name the tensor.
  p.add_string_data("extra");
  CHECK_THROWS_WITH_AS(
      tensor_from_proto(p, ""),
      doctest::Contains("tensor 'words': string_data has 4 values, shape [3] needs 3"), Error);
  onnx::TensorProto raw;
  raw.set_name("r");
  raw.set_data_type(kString);
  raw.add_dims(1);
  raw.set_raw_data("abcd");
  CHECK_THROWS_WITH_AS(
      tensor_from_proto(raw, ""),
      doctest::Contains("tensor 'r': a string tensor keeps its elements in string_data"), Error);
}

TEST_CASE("string tensors in .pb and .npy files") {
  TempDir dir;
  const Tensor t = Tensor::from_vector<std::string>({2, 2}, {"α", "", "naïve", "z"});
  write_tensor_pb(t, "x", dir / "x.pb");
  CHECK(svec(read_tensor_pb(dir / "x.pb").tensor) == svec(t));
  // .npy as numpy's unicode arrays, the width the longest element's code points.
  write_npy(t, dir / "x.npy");
  const std::string bytes = read_bytes(dir / "x.npy");
  CHECK(bytes.find("'descr': '<U5'") != std::string::npos);
  const Tensor n = read_npy(dir / "x.npy");
  CHECK(n.shape() == Shape{2, 2});
  CHECK(svec(n) == svec(t));
  // What np.save(f, np.array(["hi", "Ünïcode", "€"])) writes.
  write_bytes(dir / "np.npy", npy_unicode(7, {U"hi", U"Ünïcode", U"€"}));
  CHECK(svec(read_npy(dir / "np.npy")) == S{"hi", "Ünïcode", "€"});
  // A value that is no code point, and text that is not UTF-8, are errors naming the file.
  write_bytes(dir / "bad.npy", npy_unicode(1, {std::u32string(1, char32_t{0xd800})}));
  CHECK_THROWS_WITH_AS(
      read_npy(dir / "bad.npy"),
      doctest::Contains("bad.npy: element 0 holds 55296, not a Unicode code point"), Error);
  CHECK_THROWS_WITH_AS(write_npy(Tensor::from_vector<std::string>({1}, {"\xff"}), dir / "u.npy"),
                       doctest::Contains("u.npy: string element 0 is not valid UTF-8"), Error);
  CHECK(!fs::exists(dir.path / "u.npy"));
}

TEST_CASE("a model with a string input and a string initializer loads and runs") {
  // y = Cast(Concat(x, prefix) to float): strings in, numbers out.
  ModelBuilder mb(13);
  mb.input("x", kString, {2});
  auto* init = mb.g()->add_initializer();
  init->set_name("prefix");
  init->set_data_type(kString);
  init->add_dims(1);
  init->add_string_data("1e3");
  add_attr(mb.node("Concat", {"prefix", "x"}, {"c"}), "axis", onnx::AttributeProto::INT)->set_i(0);
  add_attr(mb.node("Cast", {"c"}, {"y"}), "to", onnx::AttributeProto::INT)->set_i(1);
  mb.output("y", kFloat, {3});
  Model m = load_model_from_bytes(mb.bytes(), "", {}, "strings.onnx");
  CHECK(m.unsupported_inputs.empty());
  REQUIRE(m.graph.inputs.size() == 1);
  CHECK(m.graph.inputs[0].dtype == DType::String);
  CHECK_NOTHROW(require_supported_inputs(m, /*allow_sequences=*/true));  // infer
  // train, eval and check feed numeric batches
  CHECK_THROWS_WITH_AS(require_supported_inputs(m),
                       doctest::Contains("input 'x' is a string tensor"), Unsupported);
  Executor ex(m.graph);
  auto out = ex.run({{"x", Tensor::from_vector<std::string>({2}, {"-2.5", "7"})}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].to_float_vector() == std::vector<float>{1000.0f, -2.5f, 7.0f});
}
