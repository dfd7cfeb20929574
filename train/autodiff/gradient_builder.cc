#include "train/autodiff/gradient_builder.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime/subgraph.h"
#include "train/autodiff/register.h"

namespace oat::train {

// Opset that emitted default-domain nodes follow (ReduceSum/Squeeze/Split take axes/split as
// inputs; ReduceMean and the other reductions still take axes as an attribute).
constexpr int64_t kEmitOpset = 17;

class GradientGraphBuilder {
 public:
  explicit GradientGraphBuilder(Graph& g) : graph_(g) {
    for (const Node& n : g.nodes)
      for (const auto& o : n.outputs) used_names_.insert(o);
    for (const auto& [k, v] : g.initializers) used_names_.insert(k);
    for (const auto& v : g.inputs) used_names_.insert(v.name);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  std::vector<std::string> emit(const std::string& op_type, const std::vector<std::string>& inputs,
                                std::map<std::string, Attribute> attrs, int num_outputs,
                                const std::string& domain, const std::string& prefix,
                                const std::vector<std::string>& output_names = {}) {
    Node n;
    n.op_type = op_type;
    n.domain = domain;
    n.op = op_from_name(op_type);
    n.opset = domain.empty() ? kEmitOpset : 1;
    n.name = fresh(prefix + "/" + op_type);
    n.inputs = inputs;
    n.attrs = std::move(attrs);
    for (int k = 0; k < num_outputs; ++k)
      n.outputs.push_back(k < static_cast<int>(output_names.size()) && !output_names[k].empty()
                              ? fresh(output_names[k])
                              : fresh(n.name + ":" + std::to_string(k)));
    if (!forward_.empty()) origin_[n.name] = forward_;
    new_nodes_.push_back(std::move(n));
    return new_nodes_.back().outputs;
  }

  // The gradient of `value`: the single contribution, or their Sum, named "<value>_grad".
  std::string accumulate(const std::string& value) {
    auto it = partials_.find(value);
    if (it == partials_.end() || it->second.empty()) return "";
    auto& parts = it->second;
    if (parts.size() == 1) return parts[0];
    std::string sum = emit("Sum", parts, {}, 1, "", value + "_grad", {value + "_grad"})[0];
    parts = {sum};
    return sum;
  }

  void add_partial(const std::string& value, const std::string& grad) {
    partials_[value].push_back(grad);
  }

  std::string shape_of(const std::string& value, const std::string& prefix) {
    auto it = shapes_.find(value);
    if (it != shapes_.end()) return it->second;
    std::string s = emit("Shape", {value}, {}, 1, "", prefix, {value + "_shape"})[0];
    shapes_[value] = s;
    return s;
  }

  // The forward node whose gradient is being built: every node emitted meanwhile is recorded as
  // following it (BackwardResult::origin). "" records nothing.
  void set_forward(std::string name) { forward_ = std::move(name); }
  std::map<std::string, std::string>& origin() { return origin_; }

  Graph& graph() { return graph_; }
  std::vector<Node>& new_nodes() { return new_nodes_; }
  const std::string& current_prefix() const { return prefix_; }
  void set_prefix(std::string p) { prefix_ = std::move(p); }

 private:
  Graph& graph_;
  std::unordered_set<std::string> used_names_;
  std::vector<Node> new_nodes_;
  std::map<std::string, std::vector<std::string>> partials_;
  std::map<std::string, std::string> shapes_;
  std::string prefix_;
  std::string forward_;
  std::map<std::string, std::string> origin_;
};

// ---- GradientContext --------------------------------------------------------------------------

GradientContext::GradientContext(GradientGraphBuilder& b, const Node& node,
                                 std::vector<std::string> grad_outputs,
                                 std::vector<bool> needs_grad_inputs)
    : b_(b),
      node_(node),
      grad_outputs_(std::move(grad_outputs)),
      needs_grad_inputs_(std::move(needs_grad_inputs)) {}

namespace {
const std::string kEmpty;
}

const Graph& GradientContext::graph() const { return b_.graph(); }

const std::string& GradientContext::I(int i) const {
  return i < static_cast<int>(node_.inputs.size()) ? node_.inputs[i] : kEmpty;
}
const std::string& GradientContext::O(int i) const {
  return i < static_cast<int>(node_.outputs.size()) ? node_.outputs[i] : kEmpty;
}
const std::string& GradientContext::GO(int i) const {
  return i < static_cast<int>(grad_outputs_.size()) ? grad_outputs_[i] : kEmpty;
}
bool GradientContext::needs_GI(int i) const {
  return i < static_cast<int>(needs_grad_inputs_.size()) && needs_grad_inputs_[i];
}

void GradientContext::set_GI(int i, const std::string& value) {
  if (!needs_GI(i)) return;
  b_.add_partial(I(i), value);
}

std::vector<std::string> GradientContext::emit(const std::string& op_type,
                                               const std::vector<std::string>& inputs,
                                               std::map<std::string, Attribute> attrs,
                                               int num_outputs, const std::string& domain) {
  return b_.emit(op_type, inputs, std::move(attrs), num_outputs, domain, node_.name + "_grad");
}

std::string GradientContext::emit1(const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   std::map<std::string, Attribute> attrs,
                                   const std::string& domain) {
  return emit(op_type, inputs, std::move(attrs), 1, domain)[0];
}

std::string GradientContext::emit_grad_op(const std::string& op_type,
                                          const std::vector<std::string>& inputs,
                                          std::map<std::string, Attribute> attrs) {
  return emit1(op_type, inputs, std::move(attrs), kGradDomain);
}

std::vector<std::string> GradientContext::emit_grad_op_outputs(
    const std::string& op_type, const std::vector<std::string>& inputs,
    std::map<std::string, Attribute> attrs, const std::vector<bool>& wanted) {
  std::vector<std::string> outs =
      emit(op_type, inputs, std::move(attrs), static_cast<int>(wanted.size()), kGradDomain);
  std::vector<std::string>& names = b_.new_nodes().back().outputs;
  for (size_t k = 0; k < wanted.size(); ++k)
    if (!wanted[k]) outs[k] = names[k] = "";
  return outs;
}

std::string GradientContext::scalar_like(double value, const std::string& like) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = Tensor::scalar<double>(value);
  std::string c = emit1("Constant", {}, {{"value", a}});
  return emit1("CastLike", {c, like});
}

std::string GradientContext::sum_to_shape_of(const std::string& grad, const std::string& like) {
  return emit_grad_op("SumToShape", {grad, shape_of(like)});
}

std::string GradientContext::shape_of(const std::string& value) {
  return b_.shape_of(value, node_.name + "_grad");
}

Attribute GradientContext::attr_int(int64_t v) { return int_attribute(v); }
Attribute GradientContext::attr_ints(std::vector<int64_t> v) { return ints_attribute(std::move(v)); }
Attribute GradientContext::attr_float(float v) { return float_attribute(v); }

// ---- registry ---------------------------------------------------------------------------------

void GradientRegistry::add(OpId op, GradientSpec spec) { table_[op] = std::move(spec); }

const GradientSpec* GradientRegistry::find(OpId op) const {
  auto it = table_.find(op);
  return it == table_.end() ? nullptr : &it->second;
}

const GradientRegistry& gradient_registry() {
  static const GradientRegistry r = [] {
    GradientRegistry reg;
    register_gradients(reg);
    return reg;
  }();
  return r;
}

// ---- the backward pass ------------------------------------------------------------------------

BackwardResult build_backward(Graph& graph, const std::string& loss,
                              const std::vector<std::string>& wrt,
                              const BackwardOptions& options) {
  const GradientRegistry& reg = gradient_registry();
  auto spec_of = [&](const Node& n) -> const GradientSpec* {
    // The internal domain too: composite expansions use the scatter-adds GatherGrad and
    // GatherElementsGrad as forward ops (ScatterND, ScatterElements).
    return n.domain.empty() || n.domain == kInternalDomain ? reg.find(n.op) : nullptr;
  };

  // Control flow (If, Loop, Scan) has no gradient, and its subgraphs read values of this graph
  // that are not among its inputs (runtime/subgraph.h): those reads count as inputs below, so a
  // parameter read only inside a Loop body puts the Loop on the path (named in the error)
  // instead of leaving the parameter silently without a gradient. If's cond and Loop's M and
  // cond only steer it.
  std::unordered_map<const Node*, std::vector<std::string>> outer_reads;
  for (const Node& n : graph.nodes)
    if (node_has_subgraph(n)) outer_reads[&n] = implicit_inputs(n);
  auto steering = [](const Node& n, size_t i) {
    return (n.op == OpId::If && i == 0) || (n.op == OpId::Loop && i < 2);
  };
  // The values n reads through which a gradient would flow.
  auto differentiable_reads = [&](const Node& n, const GradientSpec* spec) {
    std::vector<std::string> r;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty() || steering(n, i)) continue;
      if (spec && spec->non_differentiable.count(static_cast<int>(i))) continue;
      r.push_back(n.inputs[i]);
    }
    auto it = outer_reads.find(&n);
    if (it != outer_reads.end()) r.insert(r.end(), it->second.begin(), it->second.end());
    return r;
  };

  // Values that depend on a `wrt` value through differentiable inputs.
  std::unordered_set<std::string> from_wrt(wrt.begin(), wrt.end());
  for (const Node& n : graph.nodes) {
    bool depends = false;
    for (const auto& in : differentiable_reads(n, spec_of(n)))
      if (from_wrt.count(in)) depends = true;
    if (depends)
      for (const auto& o : n.outputs)
        if (!o.empty()) from_wrt.insert(o);
  }
  // Values the loss depends on.
  std::unordered_set<std::string> to_loss{loss};
  for (auto it = graph.nodes.rbegin(); it != graph.nodes.rend(); ++it) {
    bool feeds = std::any_of(it->outputs.begin(), it->outputs.end(),
                             [&](const std::string& o) { return to_loss.count(o) != 0; });
    if (!feeds) continue;
    for (const auto& in : it->inputs)
      if (!in.empty()) to_loss.insert(in);
    auto reads = outer_reads.find(&*it);
    if (reads != outer_reads.end()) to_loss.insert(reads->second.begin(), reads->second.end());
  }
  auto relevant = [&](const std::string& v) {
    return !v.empty() && from_wrt.count(v) && to_loss.count(v);
  };

  GradientGraphBuilder b(graph);
  BackwardResult result;
  result.seed = options.seed_name;
  ValueInfo seed;
  seed.name = options.seed_name;
  seed.shape = std::vector<Dim>{};
  if (const ValueInfo* lv = graph.find_value_info(loss)) seed.dtype = lv->dtype;
  b.add_partial(loss, options.seed_name);

  // Reverse topological order: every consumer of a value is differentiated before its producer,
  // so a value's gradient is complete when its producer asks for it.
  for (auto it = graph.nodes.rbegin(); it != graph.nodes.rend(); ++it) {
    const Node& n = *it;
    // The Sum of the partial gradients of n's outputs, and n's own gradient nodes, follow n.
    b.set_forward(n.name);
    std::vector<std::string> go;
    bool any_go = false;
    for (const auto& o : n.outputs) {
      go.push_back(relevant(o) || o == loss ? b.accumulate(o) : "");
      any_go |= !go.back().empty();
    }
    if (!any_go) continue;
    if (outer_reads.count(&n)) {
      for (const auto& in : differentiable_reads(n, nullptr))
        if (relevant(in)) {
          const auto& implicit = outer_reads.at(&n);
          const bool inside =
              std::find(implicit.begin(), implicit.end(), in) != implicit.end() &&
              std::find(n.inputs.begin(), n.inputs.end(), in) == n.inputs.end();
          throw Error(cat(n.describe(), ": training through control flow (If, Loop, Scan) is not "
                          "supported: autodiff has no gradient for ", n.op_type,
                          ", and it lies between the parameters and the loss (it reads '", in,
                          "'", inside ? " inside its subgraph" : "",
                          "); such models run for inference (infer, eval) only"));
        }
      continue;
    }
    const GradientSpec* spec = spec_of(n);
    std::vector<bool> needs;
    bool any_needed = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      bool need = relevant(n.inputs[i]) &&
                  !(spec && spec->non_differentiable.count(static_cast<int>(i)));
      needs.push_back(need);
      any_needed |= need;
    }
    if (!any_needed) continue;
    if (!spec || !spec->build)
      throw Error(cat(n.describe(), ": op ", n.op_type,
                      " has no gradient builder, and it lies between the parameters and the loss"));
    GradientContext ctx(b, n, go, needs);
    spec->build(ctx);
  }

  // Sums of the gradients of `wrt` values (parameters, inputs) have no forward node to follow.
  b.set_forward("");
  for (const auto& w : wrt) {
    std::string g = b.accumulate(w);
    if (g.empty()) result.no_path.push_back(w);
    else result.grads[w] = g;
  }
  result.origin = std::move(b.origin());
  graph.inputs.push_back(seed);
  for (Node& n : b.new_nodes()) graph.nodes.push_back(std::move(n));
  std::vector<std::string> known;
  for (const auto& v : graph.inputs) known.push_back(v.name);
  for (const auto& [k, t] : graph.initializers) known.push_back(k);
  topological_sort(graph.nodes, known);
  return result;
}

}  // namespace oat::train
