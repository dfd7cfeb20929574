// Test helpers: build small ONNX ModelProtos directly with the protobuf classes, and temporary
// folders that clean up after themselves. Shared by tests/onnx_loader and tests/cli.
#pragma once

#include <onnx/onnx_pb.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace oat_test {

namespace fs = std::filesystem;

// A dimension: a fixed size or a symbolic name.
using Dims = std::vector<std::variant<int64_t, std::string>>;

constexpr int kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int kInt64 = onnx::TensorProto_DataType_INT64;

inline void set_type(onnx::ValueInfoProto* v, int elem_type, const Dims* dims) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!dims) return;
  auto* shape = tt->mutable_shape();
  for (const auto& d : *dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

struct ModelBuilder {
  onnx::ModelProto m;

  explicit ModelBuilder(int64_t opset = 13, int64_t ir_version = 8) {
    m.set_ir_version(ir_version);
    m.set_producer_name("oat-test");
    m.set_producer_version("1.0");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("test_graph");
  }
  onnx::GraphProto* g() { return m.mutable_graph(); }

  onnx::ValueInfoProto* input(const std::string& name, int elem_type, const Dims& dims) {
    auto* v = g()->add_input();
    v->set_name(name);
    set_type(v, elem_type, &dims);
    return v;
  }
  onnx::ValueInfoProto* output(const std::string& name, int elem_type, const Dims& dims) {
    auto* v = g()->add_output();
    v->set_name(name);
    set_type(v, elem_type, &dims);
    return v;
  }
  // An output with an element type and no shape (for shape inference to fill).
  onnx::ValueInfoProto* output_unshaped(const std::string& name, int elem_type) {
    auto* v = g()->add_output();
    v->set_name(name);
    set_type(v, elem_type, nullptr);
    return v;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = g()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(g()->node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  // A float32 initializer stored as raw_data.
  onnx::TensorProto* init_f32(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
    auto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return t;
  }
  onnx::TensorProto* init_i64(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& values) {
    auto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(kInt64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }

  std::string bytes() const { return m.SerializeAsString(); }
  std::string save(const fs::path& path) const {
    std::ofstream(path, std::ios::binary) << bytes();
    return path.string();
  }
};

inline onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name,
                                      onnx::AttributeProto_AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

// A fresh folder under $TMPDIR, removed with everything in it when the object goes.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "oat_test_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  // Every entry in the folder (hidden ones included), sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> r;
    for (const auto& e : fs::directory_iterator(path)) r.push_back(e.path().filename().string());
    std::sort(r.begin(), r.end());
    return r;
  }
};

// A version 1.0 .npy file: the header dict padded to a 64-byte boundary, then `data`.
inline std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string b = "\x93NUMPY";
  b += '\x01';
  b += '\x00';
  b += static_cast<char>(h.size() & 0xff);
  b += static_cast<char>(h.size() >> 8);
  return b + h + data;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace oat_test
