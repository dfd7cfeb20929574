#include "train/autodiff/gradient_op.h"

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/composite.h"
#include "runtime/error.h"
#include "runtime/subgraph.h"
#include "train/autodiff/gradient_builder.h"

namespace oat::train {

namespace {

// A name of the form base, base_1, base_2, ... that `used` does not have.
std::string unused(const std::string& base, const Graph& g) {
  auto taken = [&](const std::string& v) {
    if (g.initializers.count(v) || g.value_info.count(v)) return true;
    for (const auto& i : g.inputs)
      if (i.name == v) return true;
    for (const Node& n : g.nodes)
      for (const auto& o : n.outputs)
        if (o == v) return true;
    return false;
  };
  std::string name = base;
  for (int k = 1; taken(name); ++k) name = cat(base, "_", k);
  return name;
}

void expand_gradient(Expansion& e) {
  const Node& n = e.node();
  const Graph& g = e.graph();
  if (!n.attrs.count("xs") || !n.attrs.count("y")) e.fail("attributes 'xs' and 'y' are required");
  const std::vector<std::string> xs = n.attrs.at("xs").strings;
  const std::vector<std::string> zs =
      n.attrs.count("zs") ? n.attrs.at("zs").strings : std::vector<std::string>{};
  const std::string y = n.attr_string("y", "");
  if (xs.empty() || y.empty()) e.fail("'xs' and 'y' must name values");
  if (n.inputs.size() != xs.size() + zs.size())
    e.fail(cat("has ", n.inputs.size(), " inputs; xs and zs name ", xs.size() + zs.size(),
               " values (one input each, xs first)"));
  if (n.outputs.size() > xs.size())
    e.fail(cat("has ", n.outputs.size(), " outputs; xs names ", xs.size(), " values"));

  // Each name of xs and zs -> the node's input that gives its value.
  std::map<std::string, std::string> at;
  for (size_t k = 0; k < xs.size() + zs.size(); ++k) {
    const std::string& name = k < xs.size() ? xs[k] : zs[k - xs.size()];
    if (e.input(k).empty()) e.fail(cat("input ", k, " (for '", name, "') is empty"));
    if (!at.emplace(name, e.input(k)).second)
      e.fail(cat("'", name, "' appears twice in xs and zs"));
  }

  // The nodes before this one that compute y from xs ∪ zs (and initializers).
  const std::vector<Node>& prior = e.preceding();
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < prior.size(); ++i)
    for (const auto& o : prior[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<bool> keep(prior.size(), false);
  std::set<std::string> seen, constants;
  std::vector<std::string> stack{y};
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    if (v.empty() || at.count(v) || !seen.insert(v).second) continue;
    auto p = producer.find(v);
    if (p == producer.end()) {
      if (g.initializers.count(v)) {
        constants.insert(v);
        continue;
      }
      bool input = false;
      for (const auto& i : g.inputs) input = input || i.name == v;
      if (v == y)
        e.fail(cat("y '", y, "' is not in xs or zs, and no node before this one computes it"));
      e.fail(cat("y '", y, "' depends on '", v, "', which is not in xs or zs (",
                 input ? "a graph input; the spec makes y a function of xs and zs"
                       : "no node before this one computes it",
                 ")"));
    }
    if (keep[p->second]) continue;
    keep[p->second] = true;
    const Node& m = prior[p->second];
    if (node_has_subgraph(m))
      e.fail(cat("y '", y, "' is computed through control flow (", m.describe(),
                 "), which the Gradient op does not differentiate"));
    stack.insert(stack.end(), m.inputs.begin(), m.inputs.end());
  }

  // The forward as its own graph: inputs xs ∪ zs, the kept nodes, Σ y as the loss.
  // y's type: declared or inferred; else the first x's (a graph built without shape inference).
  DType yt = e.dtype(y);
  if (yt == DType::Undefined) yt = e.dtype(e.input(0));
  if (yt == DType::Undefined) yt = DType::F32;
  Graph sub;
  sub.opsets = g.opsets;
  sub.producer = g.producer;
  for (const auto& [name, value] : at) {
    ValueInfo vi;
    vi.name = name;
    if (const ValueInfo* known = e.info(value))
      vi = *known;
    else if (const ValueInfo* own = g.find_value_info(name))
      vi = *own;
    vi.name = name;
    if (vi.dtype == DType::Undefined) vi.dtype = e.dtype(value);
    sub.inputs.push_back(vi);
  }
  for (const auto& c : constants) sub.initializers[c] = g.initializers.at(c);
  for (size_t i = 0; i < prior.size(); ++i) {
    if (!keep[i]) continue;
    sub.nodes.push_back(prior[i]);
    for (const auto& o : prior[i].outputs)
      if (const ValueInfo* vi = g.find_value_info(o)) sub.value_info[o] = *vi;
  }
  const std::string loss = unused(y + "_sum", sub);
  {
    Node sum;
    sum.name = unused("sum_of_y", sub);
    sum.op_type = "ReduceSum";
    sum.op = OpId::ReduceSum;
    sum.opset = g.opsets.count("") ? g.opsets.at("") : 17;
    sum.inputs = {y};
    sum.outputs = {loss};
    sum.attrs["keepdims"] = int_attribute(0);  // no axes: every axis, a scalar
    sub.nodes.push_back(sum);
    sub.value_info[loss] = ValueInfo{loss, yt, std::vector<Dim>{}};
    sub.outputs = {sub.value_info[loss]};
  }
  BackwardOptions options;
  options.seed_name = unused("y_grad_seed", sub);
  const std::set<std::string> before(constants);
  BackwardResult grads = build_backward(sub, loss, xs, options);

  // Emit the sub graph's nodes under fresh names: xs and zs become the node's inputs, the seed a
  // constant 1, shared initializers keep their names, new ones are copied.
  std::map<std::string, std::string> rename(at.begin(), at.end());
  for (const auto& c : constants) rename[c] = c;
  rename[options.seed_name] =
      e.constant_tensor(cast_tensor(Tensor::scalar<double>(1.0), yt), "ones_seed");
  for (const auto& [name, t] : sub.initializers)
    if (!before.count(name)) rename[name] = e.constant_tensor(t, name);
  auto map = [&](const std::string& v) -> std::string {
    if (v.empty()) return v;
    auto it = rename.find(v);
    if (it != rename.end()) return it->second;
    const std::string f = e.fresh_value(v);
    rename[v] = f;
    if (const ValueInfo* vi = sub.find_value_info(v)) e.set_info(f, vi->dtype, vi->shape);
    return f;
  };
  for (Node m : sub.nodes) {
    for (auto& i : m.inputs) i = map(i);
    for (auto& o : m.outputs) o = map(o);
    const std::string tag = m.name.empty() ? m.op_type : m.name;
    e.add_node(std::move(m), tag);
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    auto it = grads.grads.find(xs[k]);
    if (it != grads.grads.end()) {
      e.add_to("Identity", {map(it->second)}, {n.outputs[k]}, cat("d_", xs[k]));
      continue;
    }
    // y does not depend on x: zeros of x's shape and type.
    const std::string x = at.at(xs[k]);
    const DType xt = e.dtype(x) == DType::Undefined ? yt : e.dtype(x);
    Attribute zero;
    zero.kind = Attribute::Kind::Tensor;
    zero.t = cast_tensor(Tensor::from_vector<double>({1}, {0.0}), xt);
    const std::string shape = e.add1("Shape", {x}, cat("shape_", xs[k]));
    e.add_to("ConstantOfShape", {shape}, {n.outputs[k]}, cat("d_", xs[k]), {{"value", zero}});
  }
}

}  // namespace

void register_gradient_op() {
  static std::once_flag once;
  std::call_once(once,
                 [] { register_composite("ai.onnx.preview.training.Gradient", expand_gradient); });
}

}  // namespace oat::train
