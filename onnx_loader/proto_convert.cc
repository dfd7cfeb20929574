#include "onnx_loader/proto_convert.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "onnx_loader/model.h"

namespace oat::onnx_loader {

namespace TP = onnx;  // TensorProto_DataType_* live in namespace onnx
namespace fs = std::filesystem;

DType dtype_from_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case TP::TensorProto_DataType_FLOAT:
      return DType::F32;
    case TP::TensorProto_DataType_FLOAT16:
      return DType::F16;
    case TP::TensorProto_DataType_BFLOAT16:
      return DType::BF16;
    case TP::TensorProto_DataType_DOUBLE:
      return DType::F64;
    case TP::TensorProto_DataType_INT64:
      return DType::I64;
    case TP::TensorProto_DataType_INT32:
      return DType::I32;
    case TP::TensorProto_DataType_INT8:
      return DType::I8;
    case TP::TensorProto_DataType_UINT8:
      return DType::U8;
    case TP::TensorProto_DataType_BOOL:
      return DType::Bool;
    case TP::TensorProto_DataType_INT16:
      return DType::I16;
    case TP::TensorProto_DataType_UINT16:
      return DType::U16;
    case TP::TensorProto_DataType_UINT32:
      return DType::U32;
    case TP::TensorProto_DataType_UINT64:
      return DType::U64;
    case TP::TensorProto_DataType_STRING:
      return DType::String;
    default:
      break;
  }
  throw Unsupported(cat(what, ": element type ", onnx_type_name(t), " is not supported"),
                    cat("dtype ", onnx_type_name(t)));
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::F32:
      return TP::TensorProto_DataType_FLOAT;
    case DType::F16:
      return TP::TensorProto_DataType_FLOAT16;
    case DType::BF16:
      return TP::TensorProto_DataType_BFLOAT16;
    case DType::F64:
      return TP::TensorProto_DataType_DOUBLE;
    case DType::I64:
      return TP::TensorProto_DataType_INT64;
    case DType::I32:
      return TP::TensorProto_DataType_INT32;
    case DType::I8:
      return TP::TensorProto_DataType_INT8;
    case DType::U8:
      return TP::TensorProto_DataType_UINT8;
    case DType::Bool:
      return TP::TensorProto_DataType_BOOL;
    case DType::I16:
      return TP::TensorProto_DataType_INT16;
    case DType::U16:
      return TP::TensorProto_DataType_UINT16;
    case DType::U32:
      return TP::TensorProto_DataType_UINT32;
    case DType::U64:
      return TP::TensorProto_DataType_UINT64;
    case DType::String:
      return TP::TensorProto_DataType_STRING;
    case DType::Undefined:
      break;
  }
  return TP::TensorProto_DataType_UNDEFINED;
}

const char* onnx_type_name(int32_t t) {
  // TensorProto_DataType_Name returns a reference to a static string.
  if (TP::TensorProto_DataType_IsValid(t))
    return TP::TensorProto_DataType_Name(static_cast<TP::TensorProto_DataType>(t)).c_str();
  return "INVALID";
}

namespace {

std::string tensor_label(const onnx::TensorProto& p) { return cat("tensor '", p.name(), "'"); }

// Element count and byte size of a shape, refusing negative dimensions and sizes that overflow,
// before anything is allocated.
size_t checked_nbytes(const onnx::TensorProto& p, const Shape& shape, DType dt) {
  const uint64_t limit = uint64_t{1} << 62;
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(cat(tensor_label(p), ": negative dimension in ", shape_str(shape)));
    if (d != 0 && n > limit / static_cast<uint64_t>(d))
      throw Error(cat(tensor_label(p), ": shape ", shape_str(shape), " is too large"));
    n *= static_cast<uint64_t>(d);
  }
  if (n > limit / dtype_size(dt))
    throw Error(cat(tensor_label(p), ": shape ", shape_str(shape), " is too large"));
  return static_cast<size_t>(n * dtype_size(dt));
}

// Copies a repeated proto field into the tensor, converting each element.
template <class T, class Field>
Tensor from_field(const Field& field, DType dt, const Shape& shape, const onnx::TensorProto& p,
                  const char* field_name) {
  const int64_t n = numel(shape);
  if (static_cast<int64_t>(field.size()) != n)
    throw Error(cat(tensor_label(p), ": ", field_name, " has ", field.size(), " values, shape ",
                    shape_str(shape), " needs ", n));
  Tensor t(dt, shape);
  T* dst = t.data<T>();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
  return t;
}

int64_t parse_nonneg(const std::string& s, const onnx::TensorProto& p, const char* key) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < 0)
    throw Error(
        cat(tensor_label(p), ": external data ", key, " '", s, "' is not a non-negative integer"));
  return v;
}

// The external file must lie inside the model's folder: relative, without '..' components.
void check_location(const std::string& location, const onnx::TensorProto& p) {
  const fs::path loc(location);
  bool ok = !location.empty() && loc.is_relative() && !loc.has_root_name();
  for (const auto& part : loc)
    if (part == "..") ok = false;
  if (!ok)
    throw Error(cat(tensor_label(p), ": external data location '", location,
                    "' must be a relative path inside the model's folder"));
}

Tensor read_external(const onnx::TensorProto& p, const TensorSource& src, DType dt,
                     const Shape& shape, size_t want) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse_nonneg(kv.value(), p, "offset");
    else if (kv.key() == "length")
      length = parse_nonneg(kv.value(), p, "length");
  }
  if (location.empty()) throw Error(cat(tensor_label(p), ": external data without a 'location'"));
  check_location(location, p);
  if (!src.load_external) return Tensor();
  const std::string file = src.base_dir.empty() ? location : src.base_dir + "/" + location;
  if (length >= 0 && static_cast<size_t>(length) != want)
    throw Error(cat(tensor_label(p), ": external data length ", length, " but shape ",
                    shape_str(shape), " of ", dtype_name(dt), " needs ", want, " bytes"));
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error(cat(tensor_label(p), ": external data file '", file, "' does not exist"));
  const uintmax_t size = fs::file_size(file, ec);
  if (ec || static_cast<uintmax_t>(offset) > size || size - static_cast<uintmax_t>(offset) < want)
    throw Error(cat(tensor_label(p), ": external data file '", file, "' is too short (",
                    ec ? 0 : size, " bytes; need ", want, " at offset ", offset, ")"));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(cat(tensor_label(p), ": external data file '", file, "' cannot be opened"));
  Tensor t(dt, shape);
  in.seekg(offset);
  in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(want));
  if (static_cast<size_t>(in.gcount()) != want)
    throw Error(cat(tensor_label(p), ": reading external data file '", file, "' failed"));
  return t;
}

// raw_data bools may hold any non-zero byte for true; the runtime's bool is 0 or 1.
void normalise_bools(Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  auto* b = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const TensorSource& src) {
  if (p.has_segment())
    throw Unsupported(cat(tensor_label(p), ": segmented tensors are not supported"),
                      "segmented tensor");
  if (p.data_type() == TP::TensorProto_DataType_UNDEFINED)
    throw Error(cat(tensor_label(p), ": no data_type"));
  Shape shape(p.dims().begin(), p.dims().end());
  const DType dt = dtype_from_onnx(p.data_type(), tensor_label(p));
  const size_t nbytes = checked_nbytes(p, shape, dt);
  if (dt == DType::String) {  // string_data only (onnx.proto: raw_data cannot hold strings)
    if (p.data_location() == TP::TensorProto_DataLocation_EXTERNAL || p.has_raw_data())
      throw Error(cat(tensor_label(p), ": a string tensor keeps its elements in string_data, not ",
                      p.has_raw_data() ? "raw_data" : "external data"));
    const int64_t n = numel(shape);
    if (p.string_data_size() != n)
      throw Error(cat(tensor_label(p), ": string_data has ", p.string_data_size(),
                      " values, shape ", shape_str(shape), " needs ", n));
    Tensor t(dt, shape);
    std::string* dst = t.data<std::string>();
    for (int64_t i = 0; i < n; ++i) dst[i] = p.string_data(static_cast<int>(i));
    return t;
  }

  if (p.data_location() == TP::TensorProto_DataLocation_EXTERNAL)
    return read_external(p, src, dt, shape, nbytes);
  if (p.has_raw_data()) {
    if (p.raw_data().size() != nbytes)
      throw Error(cat(tensor_label(p), ": raw_data has ", p.raw_data().size(), " bytes, shape ",
                      shape_str(shape), " of ", dtype_name(dt), " needs ", nbytes));
    Tensor t(dt, shape);
    // The host is little-endian (x86-64, aarch64), as raw_data is.
    if (nbytes) std::memcpy(t.raw_data(), p.raw_data().data(), nbytes);
    normalise_bools(t);
    return t;
  }
  switch (dt) {
    case DType::F32:
      return from_field<float>(p.float_data(), dt, shape, p, "float_data");
    case DType::F64:
      return from_field<double>(p.double_data(), dt, shape, p, "double_data");
    case DType::I64:
      return from_field<int64_t>(p.int64_data(), dt, shape, p, "int64_data");
    case DType::I32:
      return from_field<int32_t>(p.int32_data(), dt, shape, p, "int32_data");
    case DType::I8:
      return from_field<int8_t>(p.int32_data(), dt, shape, p, "int32_data");
    case DType::U8:
      return from_field<uint8_t>(p.int32_data(), dt, shape, p, "int32_data");
    case DType::Bool:
      return from_field<bool>(p.int32_data(), dt, shape, p, "int32_data");
    // onnx.proto: INT16 and UINT16 in int32_data, UINT32 and UINT64 in uint64_data.
    case DType::I16:
      return from_field<int16_t>(p.int32_data(), dt, shape, p, "int32_data");
    case DType::U16:
      return from_field<uint16_t>(p.int32_data(), dt, shape, p, "int32_data");
    case DType::U32:
      return from_field<uint32_t>(p.uint64_data(), dt, shape, p, "uint64_data");
    case DType::U64:
      return from_field<uint64_t>(p.uint64_data(), dt, shape, p, "uint64_data");
    case DType::F16:
    case DType::BF16: {
      // int32_data holds the 16-bit patterns, one per element.
      const int64_t n = numel(shape);
      if (p.int32_data_size() != n)
        throw Error(cat(tensor_label(p), ": int32_data has ", p.int32_data_size(),
                        " values, shape ", shape_str(shape), " needs ", n));
      Tensor t(dt, shape);
      auto* dst = static_cast<uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      return t;
    }
    case DType::String:  // read above
    case DType::Undefined:
      break;
  }
  throw Error(cat(tensor_label(p), ": no data"));
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) p->add_string_data(t.data<std::string>()[i]);
    return;
  }
  p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

ValueInfo value_info_from_proto(const onnx::ValueInfoProto& v) {
  ValueInfo r;
  r.name = v.name();
  if (!v.has_type()) return r;
  // sequence(tensor | map), optional(tensor), optional(sequence(tensor)), map: kind and types.
  auto element_type = [&](const onnx::TypeProto& t) {
    if (!t.has_tensor_type() || t.tensor_type().elem_type() == 0) return DType::Undefined;
    try {
      return dtype_from_onnx(t.tensor_type().elem_type(), v.name());
    } catch (const Error&) {
      return DType::Undefined;
    }
  };
  // map(key, tensor): the key and value types (a key type the runtime does not store stays
  // Undefined and is reported by the loader).
  auto map_types = [&](const onnx::TypeProto::Map& m) {
    try {
      r.key = dtype_from_onnx(m.key_type(), v.name());
    } catch (const Error&) {
      r.key = DType::Undefined;
    }
    r.dtype = element_type(m.value_type());
  };
  if (v.type().has_map_type()) {
    r.kind = ValueKind::Map;
    map_types(v.type().map_type());
    return r;
  }
  if (v.type().has_sequence_type()) {
    r.kind = ValueKind::Sequence;
    const auto& e = v.type().sequence_type().elem_type();
    if (e.has_map_type()) {
      r.inner = ValueKind::Map;
      map_types(e.map_type());
      return r;
    }
    r.dtype = element_type(e);
    return r;
  }
  if (v.type().has_optional_type()) {
    const auto& e = v.type().optional_type().elem_type();
    r.kind = ValueKind::Optional;
    r.inner = e.has_sequence_type() ? ValueKind::Sequence : ValueKind::Tensor;
    r.dtype = element_type(e.has_sequence_type() ? e.sequence_type().elem_type() : e);
    return r;
  }
  if (!v.type().has_tensor_type()) return r;
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
      if (d.has_dim_value())
        dim.value = d.dim_value();
      else if (d.has_dim_param())
        dim.param = d.dim_param();
      dims.push_back(dim);
    }
    r.shape = dims;
  }
  return r;
}

namespace {

// IR version 1 models may leave AttributeProto.type unset: the type is the field that is set.
onnx::AttributeProto_AttributeType attr_type(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  if (a.type() != A::UNDEFINED) return a.type();
  if (a.has_f()) return A::FLOAT;
  if (a.has_i()) return A::INT;
  if (a.has_s()) return A::STRING;
  if (a.has_t()) return A::TENSOR;
  if (a.has_g()) return A::GRAPH;
  if (a.floats_size()) return A::FLOATS;
  if (a.ints_size()) return A::INTS;
  if (a.strings_size()) return A::STRINGS;
  if (a.tensors_size()) return A::TENSORS;
  if (a.graphs_size()) return A::GRAPHS;
  return A::UNDEFINED;
}

Attribute attr_from_proto(const onnx::AttributeProto& a,
                          const std::map<std::string, int64_t>& opsets, const TensorSource& src,
                          const std::vector<std::string>& scope, const std::string& where) {
  using K = Attribute::Kind;
  using A = onnx::AttributeProto;
  Attribute r;
  const std::string what = cat(where, ": attribute '", a.name(), "'");
  try {
    switch (attr_type(a)) {
      case A::FLOAT:
        r.kind = K::Float;
        r.f = a.f();
        break;
      case A::INT:
        r.kind = K::Int;
        r.i = a.i();
        break;
      case A::STRING:
        r.kind = K::String;
        r.s = a.s();
        break;
      case A::TENSOR:
        r.kind = K::Tensor;
        r.t = tensor_from_proto(a.t(), src);
        break;
      case A::GRAPH:
        r.kind = K::Graph;
        r.g = std::make_shared<Graph>(graph_from_proto(a.g(), opsets, src, scope, true));
        break;
      case A::FLOATS:
        r.kind = K::Floats;
        r.floats.assign(a.floats().begin(), a.floats().end());
        break;
      case A::INTS:
        r.kind = K::Ints;
        r.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case A::STRINGS:
        r.kind = K::Strings;
        r.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case A::TENSORS:
        r.kind = K::Tensors;
        for (const auto& t : a.tensors()) r.tensors.push_back(tensor_from_proto(t, src));
        break;
      case A::GRAPHS:
        r.kind = K::Graphs;
        for (const auto& g : a.graphs())
          r.graphs.push_back(
              std::make_shared<Graph>(graph_from_proto(g, opsets, src, scope, true)));
        break;
      // Kept by kind only: no runtime op reads them, and export preserves the original proto.
      case A::SPARSE_TENSOR:
        r.kind = K::SparseTensor;
        break;
      case A::SPARSE_TENSORS:
        r.kind = K::SparseTensors;
        break;
      case A::TYPE_PROTO: {
        r.kind = K::TypeProto;
        onnx::ValueInfoProto v;
        *v.mutable_type() = a.tp();
        const ValueInfo vi = value_info_from_proto(v);
        r.type_kind = vi.kind;
        r.type_inner = vi.inner;
        r.type_elem = vi.dtype;
        break;
      }
      case A::TYPE_PROTOS:
        r.kind = K::TypeProtos;
        break;
      default:
        if (!a.ref_attr_name().empty())
          throw Error(cat(what, " refers to function attribute '", a.ref_attr_name(),
                          "' outside a function"));
        throw Error(cat(what, " has unknown type ", static_cast<int>(a.type())));
    }
  } catch (const Unsupported& e) {
    throw Unsupported(cat(what, ": ", e.what()), e.key());
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(where, 0) == 0) throw;  // already names the node
    throw Error(cat(what, ": ", msg));
  }
  return r;
}

}  // namespace

Graph graph_from_proto(const onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets,
                       const TensorSource& src, const std::vector<std::string>& outer_scope,
                       bool is_subgraph) {
  Graph g;
  g.name = gp.name();
  g.opsets = opsets;
  const std::string graph_label = cat("graph '", gp.name(), "'");
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) throw Error(cat(graph_label, ": an initializer has no name"));
    if (g.initializers.count(init.name()))
      throw Error(cat(graph_label, ": initializer '", init.name(), "' appears twice"));
    g.initializers.emplace(init.name(), tensor_from_proto(init, src));
  }
  if (gp.sparse_initializer_size() > 0)
    throw Unsupported(cat(graph_label, ": sparse initializers are not supported (",
                          gp.sparse_initializer(0).values().name(), ")"),
                      "sparse_initializer");
  // Old IR (< 4): initializers are listed as graph inputs too. They stay initializers (a feed of
  // the same name still overrides them, as ONNX allows).
  std::set<std::string> input_names;
  for (const auto& in : gp.input()) {
    if (!input_names.insert(in.name()).second)
      throw Error(cat(graph_label, ": input '", in.name(), "' is declared twice"));
    if (!g.initializers.count(in.name())) g.inputs.push_back(value_info_from_proto(in));
  }
  for (const auto& out : gp.output()) g.outputs.push_back(value_info_from_proto(out));
  for (const auto& vi : gp.value_info()) g.value_info[vi.name()] = value_info_from_proto(vi);

  std::vector<std::string> scope = outer_scope;
  for (const auto& v : g.inputs) scope.push_back(v.name);
  for (const auto& [name, t] : g.initializers) scope.push_back(name);
  const std::set<std::string> own_values(scope.begin() + static_cast<long>(outer_scope.size()),
                                         scope.end());
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
    if (n.op_type.empty()) throw Error(cat(graph_label, ": node '", n.name, "' has no op_type"));
    if (!is_known_domain(n.domain))
      throw Unsupported(cat("node '", n.name, "' (", n.domain, ".", n.op_type,
                            "): unknown operator domain '", n.domain, "'"),
                        cat("domain ", n.domain));
    auto it = opsets.find(n.domain);
    if (it == opsets.end())
      throw Error(cat("node '", n.name, "' (", n.op_type,
                      "): the model imports no opset for domain '",
                      n.domain.empty() ? "ai.onnx" : n.domain, "'"));
    n.opset = it->second;
    n.op = op_from_domain(n.domain, n.op_type);
    for (const auto& o : n.outputs)
      if (!o.empty() && own_values.count(o))
        throw Error(
            cat(n.describe(), ": output '", o, "' has the name of a graph input or initializer"));
    for (const auto& a : np.attribute()) {
      if (a.name().empty()) throw Error(cat(n.describe(), ": an attribute has no name"));
      if (!n.attrs.emplace(a.name(), attr_from_proto(a, opsets, src, inner_scope, n.describe()))
               .second)
        throw Error(cat(n.describe(), ": attribute '", a.name(), "' appears twice"));
    }
    g.nodes.push_back(std::move(n));
  }
  topological_sort(g.nodes, scope, is_subgraph);
  if (!is_subgraph) {
    std::set<std::string> produced(scope.begin(), scope.end());
    for (const Node& n : g.nodes) produced.insert(n.outputs.begin(), n.outputs.end());
    for (const auto& out : g.outputs)
      if (!produced.count(out.name))
        throw Error(cat(graph_label, ": output '", out.name,
                        "' is not produced by any node, input or initializer"));
  }
  return g;
}

}  // namespace oat::onnx_loader
