#include "runtime/composite.h"

#include <algorithm>
#include <mutex>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"
#include "runtime/shape_fold.h"

namespace oat {

namespace {

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The table's key of a node: its op type in the default domain, "<domain>.<op type>" elsewhere.
std::string composite_key(const Node& n) {
  return default_domain(n.domain) ? n.op_type : n.domain + "." + n.op_type;
}

std::map<std::string, Expander>& table() {
  static std::map<std::string, Expander> t = composite::builtin_expanders();
  return t;
}

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

Expansion::Expansion(const Node& composite, std::string prefix, Graph& g,
                     std::set<std::string>& taken, std::set<std::string>& taken_nodes,
                     std::vector<Node>& out, LoweringOptions options)
    : n_(composite),
      prefix_(std::move(prefix)),
      g_(g),
      taken_(taken),
      taken_nodes_(taken_nodes),
      out_(out),
      options_(options) {}

const std::string& Expansion::input(size_t i) const {
  static const std::string none;
  return i < n_.inputs.size() ? n_.inputs[i] : none;
}

const std::string& Expansion::output(size_t i) const {
  static const std::string none;
  return i < n_.outputs.size() ? n_.outputs[i] : none;
}

const ValueInfo* Expansion::info(const std::string& value) const {
  if (const ValueInfo* vi = g_.find_value_info(value)) return vi;
  const Tensor* t = constant(value);
  if (!t) return nullptr;
  auto [it, added] = initializer_info_.try_emplace(value);
  if (added) {
    it->second.name = value;
    it->second.dtype = t->dtype();
    std::vector<Dim> dims;
    for (int64_t d : t->shape()) dims.push_back(Dim{d, ""});
    it->second.shape = std::move(dims);
  }
  return &it->second;
}

DType Expansion::dtype(const std::string& value) const {
  if (value.empty()) return DType::Undefined;
  auto it = g_.initializers.find(value);
  if (it != g_.initializers.end()) return it->second.dtype();
  const ValueInfo* vi = info(value);
  return vi ? vi->dtype : DType::Undefined;
}

const Tensor* Expansion::constant(const std::string& value) const {
  auto it = g_.initializers.find(value);
  return it == g_.initializers.end() ? nullptr : &it->second;
}

std::string Expansion::fresh(const std::string& tag, std::set<std::string>& taken) {
  std::string base = cat(prefix_, "/", tag);
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = cat(base, "_", k);
  taken.insert(name);
  return name;
}

std::vector<std::string> Expansion::add(const std::string& op_type,
                                        const std::vector<std::string>& inputs,
                                        const std::string& tag, size_t n_outputs,
                                        std::map<std::string, Attribute> attrs) {
  std::vector<std::string> outs;
  for (size_t k = 0; k < n_outputs; ++k) outs.push_back(fresh(n_outputs == 1 ? tag : cat(tag, ":", k), taken_));
  add_to(op_type, inputs, outs, tag, std::move(attrs));
  return outs;
}

std::string Expansion::add1(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::string& tag, std::map<std::string, Attribute> attrs) {
  return add(op_type, inputs, tag, 1, std::move(attrs))[0];
}

void Expansion::add_to(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs, const std::string& tag,
                       std::map<std::string, Attribute> attrs) {
  Node m;
  m.name = fresh(tag, taken_nodes_);
  m.op_type = op_type;
  m.op = op_from_name(op_type);
  m.opset = 17;
  // The runtime's own ops (ops.def from SumToShape on: GatherGrad, GatherElementsGrad, the
  // scatter-adds of ScatterND/ScatterElements) belong to its internal domain.
  if (m.op != OpId::Unknown && static_cast<int>(m.op) >= static_cast<int>(OpId::SumToShape))
    m.domain = kInternalDomain;
  m.inputs = inputs;
  m.outputs = outputs;
  m.attrs = std::move(attrs);
  m.doc_string = cat("part of ", n_.op_type, " '", prefix_, "'");
  out_.push_back(std::move(m));
}

void Expansion::add_node(Node n, const std::string& tag) {
  n.name = fresh(tag, taken_nodes_);
  n.doc_string = cat("part of ", n_.op_type, " '", prefix_, "'");
  out_.push_back(std::move(n));
}

void Expansion::set_info(const std::string& value, DType dtype,
                         std::optional<std::vector<Dim>> shape) {
  ValueInfo vi;
  vi.name = value;
  vi.dtype = dtype;
  vi.shape = std::move(shape);
  g_.value_info[value] = std::move(vi);
}

std::string Expansion::ints(const std::vector<int64_t>& v, const std::string& tag, bool scalar) {
  if (scalar && v.size() != 1) fail(cat("internal: a scalar constant needs one value, got ", v.size()));
  return constant_tensor(scalar ? Tensor::scalar<int64_t>(v[0])
                                : Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v),
                         tag);
}

std::string Expansion::constant_tensor(Tensor t, const std::string& tag) {
  std::string name = fresh(tag, taken_);
  g_.initializers[name] = std::move(t);
  return name;
}

void Expansion::fail(const std::string& what) const { throw Error(cat(n_.describe(), ": ", what)); }

void Expansion::unsupported(const std::string& what, const std::string& key) const {
  throw Unsupported(cat(n_.describe(), ": ", what), cat(n_.op_type, "(", key, ")"));
}

Expander composite_expander(const Node& n) {
  if (n.domain == kInternalDomain) return nullptr;
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().find(composite_key(n));
  return it == table().end() ? nullptr : it->second;
}

bool is_composite(const Node& n) { return composite_expander(n) != nullptr; }

bool has_composites(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return is_composite(n); });
}

std::vector<std::string> composite_op_types() {
  std::lock_guard<std::mutex> lock(table_mutex());
  std::vector<std::string> r;
  for (const auto& [op, f] : table()) r.push_back(op);
  return r;
}

void register_composite(const std::string& op_type, Expander expander) {
  std::lock_guard<std::mutex> lock(table_mutex());
  table()[op_type] = expander;
}

void lower_composites(Graph& g, std::map<std::string, CompositeOrigin>* parts,
                      LoweringOptions options) {
  if (!has_composites(g)) return;
  // Shape arithmetic on fixed dims becomes constants first, so expansions see fixed shapes
  // (runtime/shape_fold.h); a composite whose inputs all fold is evaluated away.
  fold_shape_constants(g);
  if (!has_composites(g)) return;
  // Every name in use: nodes, values, initializers, inputs and outputs.
  std::set<std::string> taken, taken_nodes;
  for (const Node& n : g.nodes) {
    taken_nodes.insert(n.name);
    taken.insert(n.inputs.begin(), n.inputs.end());
    taken.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& [name, t] : g.initializers) taken.insert(name);
  for (const auto& [name, v] : g.value_info) taken.insert(name);
  for (const auto& v : g.inputs) taken.insert(v.name);
  for (const auto& v : g.outputs) taken.insert(v.name);

  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    Expander f = composite_expander(n);
    if (!f) {
      nodes.push_back(std::move(n));
      continue;
    }
    const std::string prefix = n.name.empty() ? cat(n.op_type, "#", i) : n.name;
    const size_t first = nodes.size();
    Expansion e(n, prefix, g, taken, taken_nodes, nodes, options);
    f(e);
    // Every output the composite declares must be written by its expansion.
    std::set<std::string> written;
    for (size_t k = first; k < nodes.size(); ++k)
      written.insert(nodes[k].outputs.begin(), nodes[k].outputs.end());
    for (const auto& o : n.outputs)
      if (!o.empty() && !written.count(o))
        throw Error(cat(n.describe(), ": internal: the expansion does not write output '", o, "'"));
    if (parts)
      for (size_t k = first; k < nodes.size(); ++k) (*parts)[nodes[k].name] = {n.op_type, prefix};
  }
  g.nodes = std::move(nodes);
}

}  // namespace oat
