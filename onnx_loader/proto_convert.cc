#include "onnx_loader/proto_convert.h"

#include <cstring>
#include <fstream>

#include "onnx_loader/model.h"

namespace oat::onnx_loader {

namespace TP = onnx;  // TensorProto_DataType_* live in namespace onnx

DType dtype_from_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case TP::TensorProto_DataType_FLOAT: return DType::F32;
    case TP::TensorProto_DataType_FLOAT16: return DType::F16;
    case TP::TensorProto_DataType_BFLOAT16: return DType::BF16;
    case TP::TensorProto_DataType_DOUBLE: return DType::F64;
    case TP::TensorProto_DataType_INT64: return DType::I64;
    case TP::TensorProto_DataType_INT32: return DType::I32;
    case TP::TensorProto_DataType_INT8: return DType::I8;
    case TP::TensorProto_DataType_UINT8: return DType::U8;
    case TP::TensorProto_DataType_BOOL: return DType::Bool;
    default: break;
  }
  throw Unsupported(cat(what, ": element type ", onnx_type_name(t), " is not supported"),
                    cat("dtype ", onnx_type_name(t)));
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::F32: return TP::TensorProto_DataType_FLOAT;
    case DType::F16: return TP::TensorProto_DataType_FLOAT16;
    case DType::BF16: return TP::TensorProto_DataType_BFLOAT16;
    case DType::F64: return TP::TensorProto_DataType_DOUBLE;
    case DType::I64: return TP::TensorProto_DataType_INT64;
    case DType::I32: return TP::TensorProto_DataType_INT32;
    case DType::I8: return TP::TensorProto_DataType_INT8;
    case DType::U8: return TP::TensorProto_DataType_UINT8;
    case DType::Bool: return TP::TensorProto_DataType_BOOL;
    case DType::Undefined: break;
  }
  return TP::TensorProto_DataType_UNDEFINED;
}

const char* onnx_type_name(int32_t t) {
  if (TP::TensorProto_DataType_IsValid(t))
    return TP::TensorProto_DataType_Name(static_cast<TP::TensorProto_DataType>(t)).c_str();
  return "INVALID";
}

namespace {

std::string tensor_label(const onnx::TensorProto& p) {
  return cat("tensor '", p.name(), "'");
}

// Copies `n` values of a repeated proto field into the tensor, converting each element.
template <class T, class Field>
void copy_field(const Field& field, Tensor& t, const onnx::TensorProto& p, const char* field_name) {
  const int64_t n = t.numel();
  if (static_cast<int64_t>(field.size()) != n)
    throw Error(cat(tensor_label(p), ": ", field_name, " has ", field.size(),
                    " values, shape ", shape_str(t.shape()), " needs ", n));
  T* dst = t.data<T>();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

void read_external(const onnx::TensorProto& p, const std::string& base_dir, Tensor& t) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (location.empty())
    throw Error(cat(tensor_label(p), ": external data without a 'location'"));
  if (location.find("..") != std::string::npos || (!location.empty() && location[0] == '/'))
    throw Error(cat(tensor_label(p), ": external data location '", location,
                    "' must be a relative path inside the model's folder"));
  const std::string file = base_dir.empty() ? location : base_dir + "/" + location;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(cat(tensor_label(p), ": external data file '", file, "' cannot be opened"));
  const int64_t want = static_cast<int64_t>(t.nbytes());
  if (length >= 0 && length != want)
    throw Error(cat(tensor_label(p), ": external data length ", length, " but shape ",
                    shape_str(t.shape()), " needs ", want, " bytes"));
  in.seekg(offset);
  in.read(static_cast<char*>(t.raw_data()), want);
  if (in.gcount() != want)
    throw Error(cat(tensor_label(p), ": external data file '", file, "' is too short (need ", want,
                    " bytes at offset ", offset, ")"));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  if (p.has_segment()) throw Error(cat(tensor_label(p), ": segmented tensors are not supported"));
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(cat(tensor_label(p), ": negative dimension in ", shape_str(shape)));
  const DType dt = dtype_from_onnx(p.data_type(), tensor_label(p));
  Tensor t(dt, shape);
  const int64_t n = t.numel();

  if (p.data_location() == TP::TensorProto_DataLocation_EXTERNAL) {
    read_external(p, base_dir, t);
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes())
      throw Error(cat(tensor_label(p), ": raw_data has ", p.raw_data().size(), " bytes, shape ",
                      shape_str(shape), " of ", dtype_name(dt), " needs ", t.nbytes()));
    // The host is little-endian (x86-64, aarch64), as raw_data is.
    if (t.nbytes()) std::memcpy(t.raw_data(), p.raw_data().data(), t.nbytes());
    return t;
  }
  switch (dt) {
    case DType::F32: copy_field<float>(p.float_data(), t, p, "float_data"); break;
    case DType::F64: copy_field<double>(p.double_data(), t, p, "double_data"); break;
    case DType::I64: copy_field<int64_t>(p.int64_data(), t, p, "int64_data"); break;
    case DType::I32: copy_field<int32_t>(p.int32_data(), t, p, "int32_data"); break;
    case DType::I8: copy_field<int8_t>(p.int32_data(), t, p, "int32_data"); break;
    case DType::U8: copy_field<uint8_t>(p.int32_data(), t, p, "int32_data"); break;
    case DType::Bool: copy_field<bool>(p.int32_data(), t, p, "int32_data"); break;
    case DType::F16:
    case DType::BF16: {
      // int32_data holds the 16-bit patterns, one per element.
      if (p.int32_data_size() != n)
        throw Error(cat(tensor_label(p), ": int32_data has ", p.int32_data_size(),
                        " values, shape ", shape_str(shape), " needs ", n));
      auto* dst = static_cast<uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      break;
    }
    case DType::Undefined: break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

ValueInfo value_info_from_proto(const onnx::ValueInfoProto& v) {
  ValueInfo r;
  r.name = v.name();
  if (!v.has_type() || !v.type().has_tensor_type()) return r;
  const auto& tt = v.type().tensor_type();
  if (tt.elem_type() != 0) {
    try {
      r.dtype = dtype_from_onnx(tt.elem_type(), v.name());
    } catch (const Error&) {
      r.dtype = DType::Undefined;  // e.g. string inputs: reported when used
    }
  }
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      else if (d.has_dim_param()) dim.param = d.dim_param();
      dims.push_back(dim);
    }
    r.shape = dims;
  }
  return r;
}

namespace {

Attribute attr_from_proto(const onnx::AttributeProto& a, const std::map<std::string, int64_t>& opsets,
                          const std::string& base_dir, const std::vector<std::string>& scope,
                          const std::string& where) {
  using K = Attribute::Kind;
  Attribute r;
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_FLOAT: r.kind = K::Float; r.f = a.f(); break;
    case onnx::AttributeProto_AttributeType_INT: r.kind = K::Int; r.i = a.i(); break;
    case onnx::AttributeProto_AttributeType_STRING: r.kind = K::String; r.s = a.s(); break;
    case onnx::AttributeProto_AttributeType_TENSOR:
      r.kind = K::Tensor;
      r.t = tensor_from_proto(a.t(), base_dir);
      break;
    case onnx::AttributeProto_AttributeType_GRAPH:
      r.kind = K::Graph;
      r.g = std::make_shared<Graph>(graph_from_proto(a.g(), opsets, base_dir, scope, true));
      break;
    case onnx::AttributeProto_AttributeType_FLOATS:
      r.kind = K::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      r.kind = K::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto_AttributeType_STRINGS:
      r.kind = K::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto_AttributeType_TENSORS:
      r.kind = K::Tensors;
      for (const auto& t : a.tensors()) r.tensors.push_back(tensor_from_proto(t, base_dir));
      break;
    case onnx::AttributeProto_AttributeType_GRAPHS:
      r.kind = K::Graphs;
      for (const auto& g : a.graphs())
        r.graphs.push_back(
            std::make_shared<Graph>(graph_from_proto(g, opsets, base_dir, scope, true)));
      break;
    // Kept by kind only: no runtime op reads them, and export preserves the original proto.
    case onnx::AttributeProto_AttributeType_SPARSE_TENSOR: r.kind = K::SparseTensor; break;
    case onnx::AttributeProto_AttributeType_SPARSE_TENSORS: r.kind = K::SparseTensors; break;
    case onnx::AttributeProto_AttributeType_TYPE_PROTO: r.kind = K::TypeProto; break;
    case onnx::AttributeProto_AttributeType_TYPE_PROTOS: r.kind = K::TypeProtos; break;
    default:
      if (!a.ref_attr_name().empty())
        throw Error(cat(where, ": attribute '", a.name(), "' refers to a function attribute"));
      throw Error(cat(where, ": attribute '", a.name(), "' has unknown type ",
                      static_cast<int>(a.type())));
  }
  return r;
}

}  // namespace

Graph graph_from_proto(const onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets,
                       const std::string& base_dir, const std::vector<std::string>& outer_scope,
                       bool is_subgraph) {
  Graph g;
  g.name = gp.name();
  g.opsets = opsets;
  for (const auto& init : gp.initializer()) {
    if (g.initializers.count(init.name()))
      throw Error(cat("graph '", gp.name(), "': initializer '", init.name(), "' appears twice"));
    g.initializers.emplace(init.name(), tensor_from_proto(init, base_dir));
  }
  if (gp.sparse_initializer_size() > 0)
    throw Error(cat("graph '", gp.name(), "': sparse initializers are not supported (",
                    gp.sparse_initializer(0).values().name(), ")"));
  // Old IR (< 4): initializers are listed as graph inputs too. They stay initializers.
  for (const auto& in : gp.input())
    if (!g.initializers.count(in.name())) g.inputs.push_back(value_info_from_proto(in));
  for (const auto& out : gp.output()) g.outputs.push_back(value_info_from_proto(out));
  for (const auto& vi : gp.value_info()) g.value_info[vi.name()] = value_info_from_proto(vi);

  std::vector<std::string> scope = outer_scope;
  for (const auto& v : g.inputs) scope.push_back(v.name);
  for (const auto& [name, t] : g.initializers) scope.push_back(name);
  // Subgraphs see every value of the enclosing graph.
  std::vector<std::string> inner_scope = scope;
  for (const auto& n : gp.node())
    for (const auto& o : n.output()) inner_scope.push_back(o);

  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.name = np.name().empty() ? cat(np.op_type(), "_", i) : np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.doc_string = np.doc_string();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    if (!is_known_domain(n.domain))
      throw Unsupported(cat(n.describe(), ": unknown operator domain '", n.domain, "'"),
                        cat("domain ", n.domain));
    auto it = opsets.find(n.domain);
    if (it == opsets.end())
      throw Error(cat("node '", n.name, "' (", n.op_type, "): the model imports no opset for domain '",
                      n.domain.empty() ? "ai.onnx" : n.domain, "'"));
    n.opset = it->second;
    n.op = n.domain.empty() ? op_from_name(n.op_type) : OpId::Unknown;
    for (const auto& a : np.attribute())
      n.attrs.emplace(a.name(), attr_from_proto(a, opsets, base_dir, inner_scope, n.describe()));
    g.nodes.push_back(std::move(n));
  }
  topological_sort(g.nodes, scope, is_subgraph);
  return g;
}

}  // namespace oat::onnx_loader
