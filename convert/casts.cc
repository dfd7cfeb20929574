// apply_plan: rewrites a graph so each node computes in its planned precision.
//
// Every (node, input) slot wants a type: the node's planned type for inputs that carry its
// precision, FP32 for input_stays_fp32 slots, the original type for nodes with subgraphs (their
// bodies are never touched), nothing for integer inputs and input_accepts_any_float slots. Node
// outputs take the node's type (output_stays_fp32 outputs FP32); nodes with no input that carries
// precision (Cast, Constant, Shape) keep their output types. Where a value's type differs from what
// a slot wants, one Cast per (value, type) named "<value>_to_fp16" / "_to_bf16" / "_to_fp32" is
// placed before the first node that wants it, and every such slot reads it.
//
// Values whose name must keep its type (graph outputs with keep_io_types, keep_fp32_values, values
// that subgraphs read from the outer scope) are written by their producer under a new name
// "<value>_fp16" and cast back to the original name right after it. Graph inputs whose readers all
// want the low type become low (unless keep_io_types); with convert_initializers, initializers
// and Constant nodes' tensors read only in the low type are stored in it (F16: finite
// |x| > 65504 clamped, and reported).
#include <cmath>
#include <limits>
#include <set>

#include "convert/precision.h"
#include "convert/value_types.h"
#include "runtime/ops.h"

namespace oat::convert {

namespace {

class Rewriter {
 public:
  Rewriter(Graph& g, const PrecisionPlan& plan, const ApplyOptions& o, ApplyReport& report)
      : g_(g), plan_(plan), o_(o), report_(report), low_(plan.low) {
    check_plan();
    orig_ = infer_value_types(g);
    cur_ = orig_;
    for (const auto& [v, t] : orig_) taken_.insert(v);
    for (const Node& n : g.nodes) {
      taken_.insert(n.name);
      for (const auto& v : n.inputs) taken_.insert(v);
      for (const auto& v : outer_scope_reads(n)) protected_.insert(v);
    }
    for (const auto& v : g.outputs) {
      taken_.insert(v.name);
      if (o.keep_io_types) protected_.insert(v.name);
      graph_outputs_.insert(v.name);
    }
    for (const auto& v : o.keep_fp32_values) protected_.insert(v);
  }

  void run() {
    std::map<std::string, std::vector<DType>> wants;  // value -> the types its slots want
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const DType w = wanted(i, k);
        if (w != DType::Undefined) wants[n.inputs[k]].push_back(w);
      }
    }
    convert_graph_inputs(wants);
    if (o_.convert_initializers) {
      convert_initializers(wants);
      convert_constants(wants);
    }
    rewrite_nodes();
    for (auto& v : g_.outputs)
      if (auto it = cur_.find(v.name); it != cur_.end()) v.dtype = it->second;
    for (auto& [name, vi] : g_.value_info)
      if (auto it = cur_.find(name); it != cur_.end() && is_convertible(vi.dtype))
        vi.dtype = it->second;
  }

 private:
  Graph& g_;
  const PrecisionPlan& plan_;
  const ApplyOptions& o_;
  ApplyReport& report_;
  const DType low_;
  ValueTypes orig_, cur_;
  std::set<std::string> taken_, protected_, graph_outputs_;
  std::map<std::string, std::string> renamed_;                  // protected value -> new name
  std::map<std::pair<std::string, DType>, std::string> casts_;  // (value, type) -> Cast output

  void check_plan() const {
    if (plan_.nodes.size() != g_.nodes.size())
      throw Error(cat("apply_plan: the plan has ", plan_.nodes.size(), " nodes, graph '", g_.name,
                      "' has ", g_.nodes.size()));
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      const NodePrecision& p = plan_.nodes[i];
      if (p.node != n.name || p.op_type != n.op_type)
        throw Error(cat("apply_plan: plan entry ", i, " is '", p.node, "' (", p.op_type,
                        ") but the graph's node ", i, " is '", n.name, "' (", n.op_type, ")"));
      if (p.dtype != DType::F32 && p.dtype != plan_.low)
        throw Error(cat("apply_plan: ", n.describe(), " is planned ", dtype_name(p.dtype),
                        "; a plan holds float32 or ", dtype_name(plan_.low)));
    }
    if (plan_.low != DType::F16 && plan_.low != DType::BF16)
      throw Error(cat("apply_plan: the low precision must be float16 or bfloat16, not ",
                      dtype_name(plan_.low)));
  }

  DType orig(const std::string& v) const {
    auto it = orig_.find(v);
    return it == orig_.end() ? DType::Undefined : it->second;
  }

  // Whether node i has an input that carries its precision (so its outputs take its type).
  bool active(size_t i) const {
    const Node& n = g_.nodes[i];
    if (has_subgraph(n)) return false;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!n.inputs[k].empty() && is_convertible(orig(n.inputs[k])) && !input_stays_fp32(n, k) &&
          !input_accepts_any_float(n, k))
        return true;
    return false;
  }

  DType wanted(size_t i, size_t k) const {
    const Node& n = g_.nodes[i];
    const DType t = orig(n.inputs[k]);
    if (n.inputs[k].empty() || !is_convertible(t)) return DType::Undefined;
    if (has_subgraph(n)) return t;
    if (input_accepts_any_float(n, k)) return DType::Undefined;
    if (input_stays_fp32(n, k)) return DType::F32;
    return plan_.nodes[i].dtype;
  }

  DType output_type(size_t i, size_t k) const {
    const Node& n = g_.nodes[i];
    const DType t = orig(n.outputs[k]);
    if (!is_convertible(t) || !active(i)) return t;
    return output_stays_fp32(n, k) ? DType::F32 : plan_.nodes[i].dtype;
  }

  static bool all_low(const std::vector<DType>& w, DType low) {
    if (w.empty()) return false;
    for (DType t : w)
      if (t != low) return false;
    return true;
  }

  void convert_graph_inputs(const std::map<std::string, std::vector<DType>>& wants) {
    if (o_.keep_io_types) return;
    for (auto& in : g_.inputs) {
      auto w = wants.find(in.name);
      if (in.dtype != DType::F32 || protected_.count(in.name) || graph_outputs_.count(in.name) ||
          w == wants.end() || !all_low(w->second, low_))
        continue;
      in.dtype = low_;
      cur_[in.name] = low_;
    }
  }

  // `t` (F32) in the low type; for F16, finite values beyond ±65504 are clamped and reported.
  Tensor to_low(const Tensor& t, const std::string& name) {
    Tensor src = t;
    if (low_ == DType::F16) {
      // FP16's largest finite value is 65504; beyond it a value would become Inf.
      constexpr float kMax = 65504.0f;
      size_t clamped = 0;
      const float* p = t.data<float>();
      for (int64_t e = 0; e < t.numel(); ++e)
        if (std::isfinite(p[e]) && std::fabs(p[e]) > kMax) ++clamped;
      if (clamped) {
        src = t.clone();
        float* q = src.data<float>();
        for (int64_t e = 0; e < src.numel(); ++e)
          if (std::isfinite(q[e]) && std::fabs(q[e]) > kMax) q[e] = q[e] > 0 ? kMax : -kMax;
        report_.clamped.push_back(
            cat(name, ": ", clamped, " values beyond FP16's range clamped to ±65504"));
      }
    }
    return cast_tensor(src, low_);
  }

  void convert_initializers(const std::map<std::string, std::vector<DType>>& wants) {
    for (auto& [name, t] : g_.initializers) {
      auto w = wants.find(name);
      if (!t.defined() || t.dtype() != DType::F32 || protected_.count(name) ||
          graph_outputs_.count(name) || w == wants.end() || !all_low(w->second, low_))
        continue;
      t = to_low(t, name);
      cur_[name] = low_;
      report_.converted_initializers.push_back(name);
    }
  }

  // Constant nodes holding an F32 tensor read only in the low type: the value is stored low.
  void convert_constants(const std::map<std::string, std::vector<DType>>& wants) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& n = g_.nodes[i];
      if (n.op_type != "Constant" || !(n.domain.empty() || n.domain == "ai.onnx") ||
          n.outputs.size() != 1)
        continue;
      auto a = n.attrs.find("value");
      const std::string& v = n.outputs[0];
      auto w = wants.find(v);
      if (a == n.attrs.end() || a->second.kind != Attribute::Kind::Tensor ||
          a->second.t.dtype() != DType::F32 || protected_.count(v) || graph_outputs_.count(v) ||
          w == wants.end() || !all_low(w->second, low_))
        continue;
      a->second.t = to_low(a->second.t, n.name.empty() ? v : n.name);
      orig_[v] = low_;  // the node now writes the low type
      cur_[v] = low_;
      report_.converted_constants.push_back(n.name.empty() ? v : n.name);
    }
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name); ++k) name = cat(base, "_", k);
    taken_.insert(name);
    return name;
  }

  // Records `to` as having `from`'s shape and type `t` in value_info, when `from`'s shape is known.
  void describe_like(const std::string& to, const std::string& from, DType t) {
    const ValueInfo* vi = g_.find_value_info(from);
    if (!vi) return;
    ValueInfo copy = *vi;
    copy.name = to;
    copy.dtype = t;
    g_.value_info[to] = copy;
  }

  Node make_cast(const std::string& name, const std::string& in, const std::string& out, DType to) {
    Node c;
    c.name = name;
    c.op_type = "Cast";
    c.op = OpId::Cast;
    auto it = g_.opsets.find("");
    c.opset = it == g_.opsets.end() ? 13 : it->second;
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = onnx_type_code(to);
    c.attrs["to"] = a;
    c.inputs = {in};
    c.outputs = {out};
    ++report_.casts_inserted;
    return c;
  }

  // The name that holds `v` in type `w`, emitting a Cast into `out` when none does yet.
  std::string read_as(const std::string& v, DType w, std::vector<Node>& out) {
    if (cur_.at(v) == w) return v;
    auto r = renamed_.find(v);
    if (r != renamed_.end() && cur_.at(r->second) == w) return r->second;
    auto key = std::make_pair(v, w);
    if (auto c = casts_.find(key); c != casts_.end()) return c->second;
    const std::string src = r != renamed_.end() ? r->second : v;
    const std::string name = fresh(cat(src, "_to_", precision_name(w)));
    out.push_back(make_cast(name, src, name, w));
    cur_[name] = w;
    describe_like(name, v, w);
    casts_[key] = name;
    return name;
  }

  void rewrite_nodes() {
    std::vector<Node> out;
    out.reserve(g_.nodes.size() * 2);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node n = g_.nodes[i];
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const DType w = wanted(i, k);
        if (w != DType::Undefined) n.inputs[k] = read_as(n.inputs[k], w, out);
      }
      std::vector<Node> cast_back;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const std::string v = n.outputs[k];
        if (v.empty()) continue;
        const DType t = output_type(i, k);
        if (t == orig(v) || !protected_.count(v)) {
          cur_[v] = t;
          continue;
        }
        // The name keeps its type: compute into a new name, cast back.
        const std::string f = fresh(cat(v, "_", precision_name(t)));
        n.outputs[k] = f;
        cur_[f] = t;
        describe_like(f, v, t);
        renamed_[v] = f;
        cast_back.push_back(
            make_cast(fresh(cat(f, "_to_", precision_name(orig(v)))), f, v, orig(v)));
      }
      out.push_back(std::move(n));
      for (auto& c : cast_back) out.push_back(std::move(c));
    }
    g_.nodes = std::move(out);
  }
};

}  // namespace

ApplyReport apply_plan(Graph& g, const PrecisionPlan& plan, const ApplyOptions& options) {
  ApplyReport report;
  Rewriter(g, plan, options, report).run();
  report.casts_removed = remove_redundant_casts(g);
  return report;
}

}  // namespace oat::convert
