// .npy, TensorProto and MapProto .pb files: round trips for every dtype, numpy's own bytes, and
// malformed files, each an error naming the file.
#include "onnx_loader/tensor_io.h"

#include <doctest/doctest.h>
#include <onnx/onnx-data_pb.h>

#include "onnx_loader/model.h"
#include "onnx_loader/model_builder.h"

using namespace oat;
using namespace oat_test;
using namespace oat::onnx_loader;

namespace {

// A tensor of `dtype` with distinct, exactly representable values.
Tensor sample(DType dtype, Shape shape) {
  Tensor f = Tensor::zeros(DType::F32, shape);
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  return cast_tensor(f, dtype);
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE(".npy round trip for every dtype .npy can hold") {
  TempDir dir;
  for (DType dt : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8,
                   DType::Bool, DType::I16, DType::U16, DType::U32, DType::U64}) {
    for (const Shape& shape : {Shape{2, 3, 4}, Shape{5}, Shape{}, Shape{0, 3}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(shape_str(shape));
      Tensor t = sample(dt, shape);
      write_npy(t, dir / "t.npy");
      Tensor back = read_npy(dir / "t.npy");
      CHECK(same(t, back));
      NamedTensor nt = read_tensor_file(dir / "t.npy");
      CHECK(nt.name == "t");
      CHECK(same(t, nt.tensor));
    }
  }
  CHECK(dir.list() == std::vector<std::string>{"t.npy"});  // no temporary files left
  // bfloat16 has no numpy dtype: a clear error, and no file.
  CHECK_THROWS_WITH_AS(write_npy(sample(DType::BF16, {2}), dir / "b.npy"),
                       doctest::Contains("no bfloat16 dtype"), Error);
  CHECK_FALSE(fs::exists(dir.path / "b.npy"));
}

TEST_CASE(".npy's wider integer dtypes read as numpy writes them") {
  TempDir dir;
  // np.save(f, np.array([1, 65535], dtype=np.uint16)), and uint32 / uint64 / int16 likewise.
  const uint16_t u16[] = {1, 65535};
  write_bytes(dir / "u16.npy",
              npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
                        std::string(reinterpret_cast<const char*>(u16), 4)));
  Tensor a = read_npy(dir / "u16.npy");
  CHECK(a.dtype() == DType::U16);
  CHECK(a.to_int_vector() == std::vector<int64_t>{1, 65535});
  const uint32_t u32[] = {7, 4000000000u};
  write_bytes(dir / "u32.npy",
              npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }",
                        std::string(reinterpret_cast<const char*>(u32), 8)));
  Tensor b = read_npy(dir / "u32.npy");
  CHECK(b.dtype() == DType::U32);
  CHECK(b.to_int_vector() == std::vector<int64_t>{7, 4000000000LL});
  const uint64_t u64[] = {uint64_t{1} << 63};
  write_bytes(dir / "u64.npy",
              npy_bytes("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
                        std::string(reinterpret_cast<const char*>(u64), 8)));
  Tensor c = read_npy(dir / "u64.npy");
  CHECK(c.dtype() == DType::U64);
  CHECK(c.data<uint64_t>()[0] == uint64_t{1} << 63);
  CHECK(c.item_as_double(0) == 9223372036854775808.0);
  const int16_t i16[] = {-32768, 5};
  write_bytes(dir / "i16.npy",
              npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }",
                        std::string(reinterpret_cast<const char*>(i16), 4)));
  CHECK(read_npy(dir / "i16.npy").to_int_vector() == std::vector<int64_t>{-32768, 5});
  // A negative float cast to an unsigned type wraps as through int64 (numpy's astype).
  CHECK(cast_tensor(Tensor::scalar(-1.0f), DType::U16).item_as_int() == 65535);
  CHECK(cast_tensor(Tensor::scalar(-3.7f), DType::U32).item_as_int() == 4294967293LL);
}

TEST_CASE(".npy files as numpy writes them") {
  TempDir dir;
  // np.save(f, np.array([[1, 2], [3, 4]], dtype=np.float32)): the header numpy 1.x/2.x writes.
  const float v[] = {1, 2, 3, 4};
  write_bytes(dir / "a.npy",
              npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                        std::string(reinterpret_cast<const char*>(v), 16)));
  Tensor a = read_npy(dir / "a.npy");
  CHECK(a.shape() == Shape{2, 2});
  CHECK(a.to_float_vector() == std::vector<float>{1, 2, 3, 4});
  // A scalar, a 1-D shape with its trailing comma, and '|b1' bools stored as 0/1.
  write_bytes(dir / "s.npy", npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                                       std::string("\x09\0\0\0\0\0\0\0", 8)));
  CHECK(read_npy(dir / "s.npy").rank() == 0);
  CHECK(read_npy(dir / "s.npy").item_as_int() == 9);
  write_bytes(dir / "b.npy", npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                       std::string("\x01\x00\x01", 3)));
  CHECK(read_npy(dir / "b.npy").to_int_vector() == std::vector<int64_t>{1, 0, 1});
  // Version 2.0 headers (4-byte length).
  std::string v2 = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             std::string(reinterpret_cast<const char*>(v), 4));
  v2[6] = '\x02';
  v2.insert(10, 2, '\0');
  write_bytes(dir / "v2.npy", v2);
  CHECK(read_npy(dir / "v2.npy").to_float_vector() == std::vector<float>{1});
  // The magic decides, whatever the extension.
  fs::rename(dir.path / "a.npy", dir.path / "a.bin");
  CHECK(read_tensor_file(dir / "a.bin").tensor.shape() == Shape{2, 2});
}

TEST_CASE("malformed .npy files are errors naming the file") {
  TempDir dir;
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  auto err = [&](const std::string& bytes) {
    write_bytes(dir / "bad.npy", bytes);
    try {
      read_npy(dir / "bad.npy");
    } catch (const Error& e) {
      std::string msg = e.what();
      CHECK(msg.find("bad.npy") != std::string::npos);
      return msg;
    }
    return std::string("no error");
  };
  CHECK(err(npy_bytes(ok_dict, data)) == "no error");
  CHECK(err("").find("bad magic") != std::string::npos);
  CHECK(err("PK\x03\x04 a zip file").find("bad magic") != std::string::npos);
  CHECK(err(npy_bytes(ok_dict, data).substr(0, 30)).find("truncated .npy header") !=
        std::string::npos);
  CHECK(err(npy_bytes(ok_dict, data.substr(0, 5))).find("(truncated)") != std::string::npos);
  CHECK(err(npy_bytes(ok_dict, data + "xx")).find("has 10 bytes") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data))
            .find("big-endian") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data))
            .find("'<c8' is not supported") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data))
            .find("Fortran") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': 12345, 'shape': (2,), }", data))
            .find("fortran_order is '12345', not True or False") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'shape': (2,), }", data)).find("no fortran_order") !=
        std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (two,), }", data))
            .find("bad .npy shape") != std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, }", data)).find("no shape") !=
        std::string::npos);
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                      "4294967296, 4294967296), }",
                      data))
            .find("too large") != std::string::npos);
  std::string v9 = npy_bytes(ok_dict, data);
  v9[6] = '\x09';
  CHECK(err(v9).find("unsupported .npy version 9") != std::string::npos);
  CHECK_THROWS_WITH_AS(read_npy(dir / "missing.npy"),
                       doctest::Contains("missing.npy: no such file"), Error);
}

TEST_CASE("read_file_bytes: one reader for tensor files and models, errors naming the path") {
  TempDir dir;
  write_file_atomic((dir.path / "a.bin").string(), std::string("ab\0c", 4));
  CHECK(read_file_bytes((dir.path / "a.bin").string(), "a tensor file") == std::string("ab\0c", 4));
  const std::string d = dir.path.string();
  CHECK_THROWS_WITH_AS(read_npy(d), doctest::Contains(": is a directory, not a tensor file"),
                       Error);
  CHECK_THROWS_WITH_AS(read_tensor_pb(d), doctest::Contains(": is a directory, not a tensor file"),
                       Error);
  CHECK_THROWS_WITH_AS(load_model(d), doctest::Contains(": is a directory, not an ONNX model"),
                       Error);
  CHECK_THROWS_WITH_AS(load_model((dir.path / "nope.onnx").string()),
                       doctest::Contains("nope.onnx: no such file"), Error);
}

TEST_CASE(".pb TensorProto round trip for every dtype, with the name") {
  TempDir dir;
  for (DType dt :
       {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32, DType::I8,
        DType::U8, DType::Bool, DType::I16, DType::U16, DType::U32, DType::U64}) {
    CAPTURE(dtype_name(dt));
    Tensor t = sample(dt, {3, 2});
    write_tensor_pb(t, "my_input", dir / "input_0.pb");
    NamedTensor back = read_tensor_pb(dir / "input_0.pb");
    CHECK(back.name == "my_input");
    CHECK(same(t, back.tensor));
    CHECK(same(t, read_tensor_file(dir / "input_0.pb").tensor));
  }
  CHECK(dir.list() == std::vector<std::string>{"input_0.pb"});
  // Not a TensorProto, and a TensorProto whose data does not match its shape.
  write_bytes(dir / "junk.pb", "this is text, not a tensor");
  CHECK_THROWS_WITH_AS(read_tensor_pb(dir / "junk.pb"),
                       doctest::Contains("junk.pb: not a TensorProto"), Error);
  onnx::TensorProto p;
  p.set_name("short");
  p.set_data_type(onnx::TensorProto_DataType_FLOAT);
  p.add_dims(4);
  p.add_float_data(1.0f);
  write_bytes(dir / "short.pb", p.SerializeAsString());
  CHECK_THROWS_WITH_AS(read_tensor_pb(dir / "short.pb"),
                       doctest::Contains("short.pb: tensor 'short': float_data has 1 values"),
                       Error);
  CHECK_THROWS_WITH_AS(write_tensor_pb(Tensor::scalar(1.0f), "x", dir / "no/such/dir/x.pb"),
                       doctest::Contains("is not an existing folder"), Error);
}

TEST_CASE("MapProto files and sequences of maps: round trips, numpy_helper's layout, errors") {
  TempDir dir;
  Tensor keys(DType::String, {3});
  keys.data<std::string>()[0] = "b";
  keys.data<std::string>()[1] = "a";
  keys.data<std::string>()[2] = "c";
  const Tensor m = Tensor::map(keys, Tensor::from_vector<double>({3}, {2, 1, 3}));
  write_value_pb(m, "m", dir / "m.pb");
  NamedTensor back = read_value_pb(dir / "m.pb", ValueKind::Map);
  CHECK(back.name == "m");
  REQUIRE(back.tensor.kind() == ValueKind::Map);
  CHECK(back.tensor.key_dtype() == DType::String);
  CHECK(back.tensor.map_keys().data<std::string>()[0] == "a");
  CHECK(back.tensor.map_values().to_float_vector() == std::vector<float>{1, 2, 3});

  const Tensor im = Tensor::map(Tensor::from_vector<int32_t>({2}, {9, -4}),
                                Tensor::from_vector<int64_t>({2}, {90, -40}));
  const Tensor seq = Tensor::sequence(DType::I64, {im, im});
  write_value_pb(seq, "s", dir / "s.pb");
  const Tensor s = read_value_pb(dir / "s.pb", ValueKind::Sequence).tensor;
  CHECK(s.describe() == "sequence(map(int32, int64)) of 2");
  CHECK(s.items()[1].map_keys().to_int_vector() == std::vector<int64_t>{-4, 9});
  CHECK(s.items()[1].map_values().to_int_vector() == std::vector<int64_t>{-40, 90});

  // onnx.numpy_helper.from_dict writes one scalar tensor per key; one tensor of all the values
  // is read too; a count that matches neither is an error naming the file
  onnx::MapProto p;
  p.set_name("q");
  p.set_key_type(onnx::TensorProto::INT64);
  p.add_keys(5);
  p.add_keys(1);
  p.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  auto* t = p.mutable_values()->add_tensor_values();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_float_data(0.5f);
  t->add_float_data(0.25f);
  std::string bytes;
  p.SerializeToString(&bytes);
  write_file_atomic(dir / "q.pb", bytes);
  const Tensor q = read_value_pb(dir / "q.pb", ValueKind::Map).tensor;
  CHECK(q.map_values().to_float_vector() == std::vector<float>{0.25f, 0.5f});
  p.add_keys(7);
  p.SerializeToString(&bytes);
  write_file_atomic(dir / "q3.pb", bytes);
  CHECK_THROWS_WITH_AS(read_value_pb(dir / "q3.pb", ValueKind::Map),
                       doctest::Contains("q3.pb: map 'q': 3 keys and 2 values"), Error);
  p.set_key_type(onnx::TensorProto::FLOAT);
  p.SerializeToString(&bytes);
  write_file_atomic(dir / "qf.pb", bytes);
  CHECK_THROWS_WITH_AS(read_value_pb(dir / "qf.pb", ValueKind::Map),
                       doctest::Contains("keys of type float32"), Error);
}
