// Initializers in every TensorProto storage form, external data, and the size checks that keep a
// corrupt header from allocating terabytes.
#include <doctest/doctest.h>

#include <cstring>

#include "onnx_loader/model.h"
#include "onnx_loader/model_builder.h"
#include "onnx_loader/proto_convert.h"

using namespace oat;
using namespace oat_test;
using onnx_loader::tensor_from_proto;
using onnx_loader::tensor_to_proto;

namespace {

onnx::TensorProto make(const std::string& name, int type, std::vector<int64_t> dims) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(type);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

std::string error_of(const onnx::TensorProto& p, const std::string& base_dir = "") {
  try {
    tensor_from_proto(p, base_dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("raw_data is little-endian bytes of the element type") {
  auto p = make("w", onnx::TensorProto_DataType_FLOAT, {2, 2});
  std::vector<float> v = {1.5f, -2.0f, 0.25f, 8.0f};
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), 16));
  Tensor t = tensor_from_proto(p, "");
  CHECK(t.dtype() == DType::F32);
  CHECK(t.shape() == Shape{2, 2});
  CHECK(t.to_float_vector() == v);

  auto q = make("b", onnx::TensorProto_DataType_BOOL, {3});
  q.set_raw_data(std::string("\x00\x01\x07", 3));  // any non-zero byte is true
  Tensor b = tensor_from_proto(q, "");
  CHECK(b.data<bool>()[0] == false);
  CHECK(b.data<bool>()[2] == true);
  CHECK(static_cast<const uint8_t*>(b.raw_data())[2] == 1);

  auto s = make("s", onnx::TensorProto_DataType_INT64, {});
  int64_t x = -42;
  s.set_raw_data(std::string(reinterpret_cast<const char*>(&x), 8));
  CHECK(tensor_from_proto(s, "").item_as_int() == -42);
}

TEST_CASE("typed fields: float_data, double_data, int64_data, int32_data") {
  auto f = make("f", onnx::TensorProto_DataType_FLOAT, {3});
  for (float x : {1.0f, 2.5f, -3.0f}) f.add_float_data(x);
  CHECK(tensor_from_proto(f, "").to_float_vector() == std::vector<float>{1.0f, 2.5f, -3.0f});

  auto d = make("d", onnx::TensorProto_DataType_DOUBLE, {2});
  d.add_double_data(0.1);
  d.add_double_data(-1e300);
  Tensor td = tensor_from_proto(d, "");
  CHECK(td.dtype() == DType::F64);
  CHECK(td.data<double>()[0] == 0.1);
  CHECK(td.data<double>()[1] == -1e300);

  auto l = make("l", onnx::TensorProto_DataType_INT64, {2});
  l.add_int64_data(int64_t{1} << 40);
  l.add_int64_data(-7);
  CHECK(tensor_from_proto(l, "").to_int_vector() == std::vector<int64_t>{int64_t{1} << 40, -7});

  auto i = make("i", onnx::TensorProto_DataType_INT32, {2});
  i.add_int32_data(-5);
  i.add_int32_data(1 << 30);
  Tensor ti = tensor_from_proto(i, "");
  CHECK(ti.dtype() == DType::I32);
  CHECK(ti.to_int_vector() == std::vector<int64_t>{-5, 1 << 30});
}

TEST_CASE("int32_data carries FP16/BF16 bit patterns and int8/uint8/bool values") {
  auto h = make("h", onnx::TensorProto_DataType_FLOAT16, {3});
  for (int bits : {0x3C00, 0xC000, 0x3800}) h.add_int32_data(bits);  // 1, -2, 0.5
  Tensor th = tensor_from_proto(h, "");
  CHECK(th.dtype() == DType::F16);
  CHECK(th.to_float_vector() == std::vector<float>{1.0f, -2.0f, 0.5f});

  auto b = make("b", onnx::TensorProto_DataType_BFLOAT16, {2});
  for (int bits : {0x3F80, 0xC0A0}) b.add_int32_data(bits);  // 1, -5
  Tensor tb = tensor_from_proto(b, "");
  CHECK(tb.dtype() == DType::BF16);
  CHECK(tb.to_float_vector() == std::vector<float>{1.0f, -5.0f});

  auto i8 = make("i8", onnx::TensorProto_DataType_INT8, {2});
  i8.add_int32_data(-128);
  i8.add_int32_data(127);
  Tensor t8 = tensor_from_proto(i8, "");
  CHECK(t8.dtype() == DType::I8);
  CHECK(t8.to_int_vector() == std::vector<int64_t>{-128, 127});

  auto u8 = make("u8", onnx::TensorProto_DataType_UINT8, {2});
  u8.add_int32_data(0);
  u8.add_int32_data(255);
  Tensor tu = tensor_from_proto(u8, "");
  CHECK(tu.dtype() == DType::U8);
  CHECK(tu.to_int_vector() == std::vector<int64_t>{0, 255});

  auto bo = make("bo", onnx::TensorProto_DataType_BOOL, {3});
  for (int v : {0, 1, 3}) bo.add_int32_data(v);
  Tensor tbo = tensor_from_proto(bo, "");
  CHECK(tbo.dtype() == DType::Bool);
  CHECK(tbo.to_int_vector() == std::vector<int64_t>{0, 1, 1});
}

TEST_CASE("int16/uint16 in int32_data, uint32/uint64 in uint64_data, and raw_data for all four") {
  auto i16 = make("i16", onnx::TensorProto_DataType_INT16, {2});
  i16.add_int32_data(-32768);
  i16.add_int32_data(32767);
  Tensor t16 = tensor_from_proto(i16, "");
  CHECK(t16.dtype() == DType::I16);
  CHECK(t16.to_int_vector() == std::vector<int64_t>{-32768, 32767});

  auto u16 = make("u16", onnx::TensorProto_DataType_UINT16, {2});
  u16.add_int32_data(0);
  u16.add_int32_data(65535);
  Tensor tu16 = tensor_from_proto(u16, "");
  CHECK(tu16.dtype() == DType::U16);
  CHECK(tu16.to_int_vector() == std::vector<int64_t>{0, 65535});

  auto u32 = make("u32", onnx::TensorProto_DataType_UINT32, {2});
  u32.add_uint64_data(4294967295ULL);
  u32.add_uint64_data(3);
  Tensor tu32 = tensor_from_proto(u32, "");
  CHECK(tu32.dtype() == DType::U32);
  CHECK(tu32.to_int_vector() == std::vector<int64_t>{4294967295LL, 3});

  auto u64 = make("u64", onnx::TensorProto_DataType_UINT64, {1});
  u64.add_uint64_data(18446744073709551615ULL);
  Tensor tu64 = tensor_from_proto(u64, "");
  CHECK(tu64.dtype() == DType::U64);
  CHECK(tu64.data<uint64_t>()[0] == 18446744073709551615ULL);
  // A count that does not match the shape names the field.
  auto short64 = make("short", onnx::TensorProto_DataType_UINT64, {2});
  short64.add_uint64_data(1);
  CHECK_THROWS_WITH_AS(tensor_from_proto(short64, ""),
                       doctest::Contains("tensor 'short': uint64_data has 1 values"), Error);
  // Written back as raw_data of the same type, and read again.
  for (const Tensor* t : {&t16, &tu16, &tu32, &tu64}) {
    onnx::TensorProto p;
    tensor_to_proto(*t, "x", &p);
    Tensor back = tensor_from_proto(p, "");
    CHECK(back.dtype() == t->dtype());
    CHECK(std::memcmp(back.raw_data(), t->raw_data(), t->nbytes()) == 0);
  }
}

TEST_CASE("wrong data sizes and impossible shapes are errors naming the tensor, not allocations") {
  auto f = make("conv1.weight", onnx::TensorProto_DataType_FLOAT, {2, 3});
  f.add_float_data(1.0f);
  CHECK(contains(error_of(f), "conv1.weight"));
  CHECK(contains(error_of(f), "float_data has 1 values"));

  auto r = make("fc.bias", onnx::TensorProto_DataType_FLOAT, {4});
  r.set_raw_data(std::string(12, '\0'));
  CHECK(contains(error_of(r), "'fc.bias': raw_data has 12 bytes"));

  // 2^40 x 2^40 floats: refused by arithmetic, before any allocation is tried.
  auto huge = make("huge", onnx::TensorProto_DataType_FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  CHECK(contains(error_of(huge), "too large"));
  // 4 TiB that does not overflow: refused because the data is not there.
  auto big = make("big", onnx::TensorProto_DataType_FLOAT, {int64_t{1} << 20, int64_t{1} << 20});
  CHECK(contains(error_of(big), "'big': float_data has 0 values"));

  auto neg = make("neg", onnx::TensorProto_DataType_FLOAT, {-1});
  CHECK(contains(error_of(neg), "negative dimension"));

  auto cpx = make("phases", onnx::TensorProto_DataType_COMPLEX64, {1});
  cpx.add_float_data(1.0f);
  cpx.add_float_data(0.0f);
  CHECK_THROWS_AS(tensor_from_proto(cpx, ""), Unsupported);
  CHECK(contains(error_of(cpx), "COMPLEX64"));  // strings: string_tensor_test.cc
}

TEST_CASE("external data: location relative to the model, offset and length") {
  TempDir dir;
  // Two tensors in one file, the second at offset 4096 (how onnx.save_model aligns them).
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> b = {10, -20};
  std::string blob(4096 + 16, '\0');
  std::memcpy(blob.data(), a.data(), 24);
  std::memcpy(blob.data() + 4096, b.data(), 16);
  fs::create_directories(dir.path / "weights");
  write_bytes(dir / "weights/model.bin", blob);

  ModelBuilder mb;
  auto ext = [](onnx::TensorProto* t, const std::string& loc, const std::string& off,
                const std::string& len) {
    t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      if (v.empty()) return;
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", loc);
    add("offset", off);
    add("length", len);
  };
  auto* ta = mb.g()->add_initializer();
  ta->set_name("a");
  ta->set_data_type(kFloat);
  ta->add_dims(2);
  ta->add_dims(3);
  ext(ta, "weights/model.bin", "", "24");
  auto* tb = mb.g()->add_initializer();
  tb->set_name("b");
  tb->set_data_type(kInt64);
  tb->add_dims(2);
  ext(tb, "weights/model.bin", "4096", "");
  mb.output("a", kFloat, {2, 3});
  mb.output("b", kInt64, {2});
  mb.save(dir.path / "model.onnx");

  auto m = onnx_loader::load_model(dir / "model.onnx");
  CHECK(m.graph.initializers.at("a").to_float_vector() == a);
  CHECK(m.graph.initializers.at("b").to_int_vector() == b);

  SUBCASE("load_external_data=false leaves them unloaded") {
    onnx_loader::LoadOptions opts;
    opts.load_external_data = false;
    auto lazy = onnx_loader::load_model(dir / "model.onnx", opts);
    CHECK_FALSE(lazy.graph.initializers.at("a").defined());
  }
  SUBCASE("a missing file is named") {
    fs::remove(dir.path / "weights/model.bin");
    std::string msg;
    try {
      onnx_loader::load_model(dir / "model.onnx");
    } catch (const Error& e) {
      msg = e.what();
    }
    CHECK(contains(msg, "model.onnx"));
    CHECK(contains(msg, "weights/model.bin"));
    CHECK(contains(msg, "does not exist"));
  }
  SUBCASE("a short file") {
    write_bytes(dir / "weights/model.bin", blob.substr(0, 4100));
    CHECK_THROWS_WITH_AS(onnx_loader::load_model(dir / "model.onnx"),
                         doctest::Contains("is too short"), Error);
  }
}

TEST_CASE("external data errors: bad location, bad length, bad offset") {
  TempDir dir;
  write_bytes(dir / "w.bin", std::string(64, '\0'));
  auto p = make("w", onnx::TensorProto_DataType_FLOAT, {4});
  p.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* loc = p.add_external_data();
  loc->set_key("location");
  loc->set_value("w.bin");
  CHECK(tensor_from_proto(p, dir.path.string()).numel() == 4);

  loc->set_value("../w.bin");
  CHECK(contains(error_of(p, dir.path.string()), "must be a relative path inside"));
  loc->set_value("/etc/passwd");
  CHECK(contains(error_of(p, dir.path.string()), "must be a relative path inside"));
  loc->set_value("w.bin");

  auto* len = p.add_external_data();
  len->set_key("length");
  len->set_value("8");
  CHECK(contains(error_of(p, dir.path.string()), "external data length 8"));
  len->set_value("16");
  auto* off = p.add_external_data();
  off->set_key("offset");
  off->set_value("4k");
  CHECK(contains(error_of(p, dir.path.string()), "offset '4k' is not a non-negative integer"));
  off->set_value("60");
  CHECK(contains(error_of(p, dir.path.string()), "too short"));
}

TEST_CASE("initializers through load_model: every form in one model") {
  ModelBuilder mb;
  mb.init_f32("raw", {2}, {1.0f, 2.0f});
  mb.init_i64("ints", {3}, {4, 5, 6});
  auto* h = mb.g()->add_initializer();
  h->set_name("half");
  h->set_data_type(onnx::TensorProto_DataType_FLOAT16);
  h->add_dims(1);
  h->add_int32_data(0x4000);  // 2.0
  for (const char* n : {"raw", "ints", "half"}) mb.output(n, 0, {});
  auto m = onnx_loader::load_model_from_bytes(mb.bytes(), "");
  CHECK(m.graph.initializers.size() == 3);
  CHECK(m.graph.initializers.at("half").to_float_vector() == std::vector<float>{2.0f});
  CHECK(m.graph.initializers.at("ints").to_int_vector() == std::vector<int64_t>{4, 5, 6});
  CHECK(m.graph.inputs.empty());

  mb.init_f32("raw", {1}, {0.0f});  // a second initializer of the same name
  CHECK_THROWS_WITH_AS(onnx_loader::load_model_from_bytes(mb.bytes(), ""),
                       doctest::Contains("initializer 'raw' appears twice"), Error);
}
