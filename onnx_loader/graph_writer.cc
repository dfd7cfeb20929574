#include "onnx_loader/graph_writer.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "onnx_loader/proto_convert.h"
#include "onnx_loader/tensor_io.h"

namespace oat::onnx_loader {

void value_info_to_proto(const ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (v.kind != ValueKind::Tensor) {
    // sequence(tensor | map), optional(tensor | sequence(tensor)), map(key, tensor)
    onnx::TypeProto* t = p->mutable_type();
    if (v.kind == ValueKind::Optional) t = t->mutable_optional_type()->mutable_elem_type();
    if (v.kind == ValueKind::Sequence || v.inner == ValueKind::Sequence)
      t = t->mutable_sequence_type()->mutable_elem_type();
    if (v.kind == ValueKind::Map || (v.kind == ValueKind::Sequence && v.inner == ValueKind::Map)) {
      auto* m = t->mutable_map_type();
      if (v.key != DType::Undefined) m->set_key_type(dtype_to_onnx(v.key));
      t = m->mutable_value_type();
    }
    if (v.dtype != DType::Undefined)
      t->mutable_tensor_type()->set_elem_type(dtype_to_onnx(v.dtype));
    else
      t->mutable_tensor_type();
    return;
  }
  auto* tt = p->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (!v.shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* dim = shape->add_dim();
    if (d.fixed()) dim->set_dim_value(d.value);
    else if (!d.param.empty()) dim->set_dim_param(d.param);
  }
}

namespace {

void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* p,
                        const Node& n) {
  using K = Attribute::Kind;
  using A = onnx::AttributeProto;
  p->set_name(name);
  switch (a.kind) {
    case K::Float: p->set_type(A::FLOAT); p->set_f(a.f); break;
    case K::Int: p->set_type(A::INT); p->set_i(a.i); break;
    case K::String: p->set_type(A::STRING); p->set_s(a.s); break;
    case K::Tensor: p->set_type(A::TENSOR); tensor_to_proto(a.t, "", p->mutable_t()); break;
    case K::Graph: p->set_type(A::GRAPH); graph_to_proto(*a.g, p->mutable_g()); break;
    case K::Floats:
      p->set_type(A::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      break;
    case K::Ints:
      p->set_type(A::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      break;
    case K::Strings:
      p->set_type(A::STRINGS);
      for (const auto& s : a.strings) p->add_strings(s);
      break;
    case K::Tensors:
      p->set_type(A::TENSORS);
      for (const auto& t : a.tensors) tensor_to_proto(t, "", p->add_tensors());
      break;
    case K::Graphs:
      p->set_type(A::GRAPHS);
      for (const auto& sg : a.graphs) graph_to_proto(*sg, p->add_graphs());
      break;
    case K::TypeProto: {  // Optional's `type`: written as it was read (value_info_to_proto)
      p->set_type(A::TYPE_PROTO);
      ValueInfo v;
      v.kind = a.type_kind;
      v.inner = a.type_inner;
      v.dtype = a.type_elem;
      onnx::ValueInfoProto vp;
      value_info_to_proto(v, &vp);
      *p->mutable_tp() = vp.type();
      break;
    }
    default:
      throw Error(cat(n.describe(), ": attribute '", name, "' of kind ",
                      attribute_kind_name(a.kind), " cannot be written"));
  }
}

}  // namespace

void graph_to_proto(const Graph& g, onnx::GraphProto* gp) {
  gp->set_name(g.name.empty() ? "graph" : g.name);
  for (const auto& [name, t] : g.initializers) tensor_to_proto(t, name, gp->add_initializer());
  for (const auto& v : g.inputs) value_info_to_proto(v, gp->add_input());
  for (const auto& v : g.outputs) value_info_to_proto(v, gp->add_output());
  for (const auto& [name, v] : g.value_info) value_info_to_proto(v, gp->add_value_info());
  for (const Node& n : g.nodes) {
    auto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    np->set_domain(n.domain);
    if (!n.doc_string.empty()) np->set_doc_string(n.doc_string);
    for (const auto& i : n.inputs) np->add_input(i);
    for (const auto& o : n.outputs) np->add_output(o);
    for (const auto& [k, a] : n.attrs) attribute_to_proto(k, a, np->add_attribute(), n);
  }
}

std::string serialize_graph(const Graph& g, const GraphWriteOptions& options) {
  onnx::ModelProto m;
  m.set_ir_version(options.ir_version);
  m.set_producer_name(options.producer_name);
  m.set_producer_version(options.producer_version);
  if (!options.doc_string.empty()) m.set_doc_string(options.doc_string);
  for (const auto& [domain, version] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  graph_to_proto(g, m.mutable_graph());
  if (options.check) {
    try {
      onnx::checker::check_model(m);
    } catch (const std::exception& e) {
      throw Error(cat("the ONNX checker rejects the written model: ", e.what()));
    }
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) throw Error("the model could not be serialised");
  return bytes;
}

void save_graph(const Graph& g, const std::string& path, const GraphWriteOptions& options) {
  write_file_atomic(path, serialize_graph(g, options));
}

}  // namespace oat::onnx_loader
