// The painting pass: every node of a graph gets FP32 or the low precision, with the reason.
//
// TensorFlow's auto_mixed_precision algorithm (DESIGN.md "Mixed precision"), on a view of the
// graph whose edges carry precision: p -> n when n reads, at an input that takes its own precision
// (not an input_stays_fp32 / input_accepts_any_float slot, not an integer), a value that p writes
// at an output that follows p's precision. Integer paths (Shape -> Gather -> Concat -> Reshape's
// shape) are no edges, so deny never travels through them and they are never cast.
//
//   A. fixed by the node alone: no float values (integer/f64 only) -> not painted; a subgraph
//      (If/Loop/Scan) -> FP32; pins; allow -> low; deny and ops in no list -> FP32; Cast, Shape,
//      Size, Constant (no input that carries precision) -> their output type is fixed. For F16
//      only (PaintOptions::out_of_range_fp32), an infer node that reads a float initializer or
//      Constant (directly or through Identity/Reshape/Squeeze/Unsqueeze/Flatten/Transpose/Expand)
//      whose largest finite magnitude m is not 0 -> FP32 when
//        m > 65504 (FP16 would hold ±inf or the clamped ±65504), any infer op; or
//        m < 2^-14 = 6.1e-5 (FP16 has only subnormals there: fixed spacing 2^-24, so 1e-6 keeps
//        ~4 significant bits), for Mul and Div: the factor's relative error becomes the
//        output's, and the product (and the gradient flowing back through it) underflows.
//        ConvNeXt's layer scale, 1e-6; PyTorch AMP computes x16 * g32 in FP32. Add, Sub, Max,
//        Min, Clip, Where are left alone: the constant's absolute error (<= 2^-25) is no larger
//        than the rounding of their FP16 output, so ViT's MLP biases, initialised N(0, 1e-6),
//        keep their Adds in FP16 as in PyTorch.
//   B. deny spreads forward from deny nodes, and from the nodes kept FP32 for an out-of-range
//      constant (so the residual Add after a layer-scale Mul runs FP32 too, as the widest of its
//      inputs), through open infer/clear nodes.
//   C. open infer/clear nodes that are reachable forward from a low node (or whose float inputs
//      are all initializers/graph inputs) and reach a low node forward become low.
//   D. the rest, until nothing changes: a follower copies the node it follows; an infer node takes
//      the widest type arriving at its inputs (initializers and constants are neutral: they take
//      any type); a clear node joins a low producer or consumer, else FP32.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "convert/precision.h"
#include "convert/value_types.h"

namespace oat::convert {

namespace {

enum class State : uint8_t { Open, Low, F32 };

// What arrives at one precision-carrying input.
struct Arrival {
  enum Kind { FromNode, Fixed, Neutral } kind = Fixed;
  size_t node = 0;          // FromNode: the active producer
  DType type = DType::F32;  // Fixed: the value's type
  std::string label;        // who it comes from, for reasons
  std::string value;        // the value read
};

// A float constant behind a value: the largest finite |x| (-1: not a float constant) and what it
// is, for reasons ("initializer 'g'", "constant 'c' through 'ident'").
struct ConstRange {
  double max_abs = -1;
  std::string what;
};

constexpr double kF16MinNormal = 6.103515625e-05;  // 2^-14
constexpr double kF16Max = 65504.0;

double max_finite_abs(const Tensor& t) {
  double m = 0;
  const int64_t n = t.numel();
  if (t.dtype() == DType::F32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(p[i])) m = std::max(m, static_cast<double>(std::fabs(p[i])));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const double v = t.item_as_double(i);
      if (std::isfinite(v)) m = std::max(m, std::fabs(v));
    }
  }
  return m;
}

// Ops whose output holds exactly their first input's values (rearranged or repeated).
bool passes_values(const Node& n) {
  static const std::set<std::string> ops = {"Identity", "Reshape",   "Squeeze", "Unsqueeze",
                                            "Flatten",  "Transpose", "Expand"};
  return (n.domain.empty() || n.domain == "ai.onnx") && ops.count(n.op_type) && !n.inputs.empty();
}

class Painter {
 public:
  Painter(const Graph& g, const PaintOptions& o) : g_(g), o_(o), n_(g.nodes.size()) {
    if (o.low != DType::F16 && o.low != DType::BF16)
      throw Error(
          cat("paint: the low precision must be float16 or bfloat16, not ", dtype_name(o.low)));
    low_ = precision_name(o.low);
    types_ = infer_value_types(g);
    index_names();
    build_edges();
  }

  PrecisionPlan run() {
    state_.assign(n_, State::Open);
    reason_.assign(n_, "");
    follow_.assign(n_, -1);
    range_root_.assign(n_, "");
    resolve_pins_and_follow();
    step_fixed();
    step_deny();
    step_between();
    step_rest();
    PrecisionPlan plan;
    plan.low = o_.low;
    for (size_t i = 0; i < n_; ++i) {
      NodePrecision p;
      p.node = g_.nodes[i].name;
      p.op_type = g_.nodes[i].op_type;
      p.dtype = state_[i] == State::Low ? o_.low : DType::F32;
      p.reason = reason_[i];
      p.carries_floats = carries_[i];
      plan.nodes.push_back(std::move(p));
    }
    return plan;
  }

 private:
  const Graph& g_;
  const PaintOptions& o_;
  const size_t n_;
  std::string low_;
  ValueTypes types_;
  std::map<std::string, std::vector<size_t>> by_name_;
  std::map<std::string, std::pair<size_t, size_t>> producer_;  // value -> (node, output)
  std::vector<std::vector<size_t>> preds_, succs_;
  std::vector<std::vector<Arrival>> arrivals_;
  std::vector<bool> carries_, active_, constant_only_;
  std::vector<State> state_;
  std::vector<std::string> reason_;
  std::vector<long> follow_;
  std::vector<std::string> range_root_;  // kept FP32 for this out-of-range constant ("" if not)
  std::map<std::string, ConstRange> ranges_;

  std::string label(size_t i) const {
    const Node& n = g_.nodes[i];
    return n.name.empty() ? cat("#", i, " (", n.op_type, ")") : n.name;
  }
  // The composite (op type, name) node i is part of, nullptr when it is a node of its own.
  const std::pair<std::string, std::string>* composite(size_t i) const {
    auto it = o_.part_of.find(g_.nodes[i].name);
    return it == o_.part_of.end() ? nullptr : &it->second;
  }
  OpList list(size_t i) const {
    const Node& n = g_.nodes[i];
    if (const auto* c = composite(i)) return o_.lists.list_of(c->first);
    if (!n.domain.empty() && n.domain != "ai.onnx") return OpList::None;
    return o_.lists.list_of(n.op_type);
  }
  // "allow list" or "allow list (LSTM 'lstm1')" for a part of a composite.
  std::string list_reason(size_t i, const char* what) const {
    const auto* c = composite(i);
    return c ? cat(what, " (", c->first, " '", c->second, "')") : std::string(what);
  }
  DType type_of(const std::string& v) const {
    auto it = types_.find(v);
    return it == types_.end() ? DType::Undefined : it->second;
  }
  bool carrying_input(const Node& n, size_t i) const {
    return !n.inputs[i].empty() && is_convertible(type_of(n.inputs[i])) &&
           !input_stays_fp32(n, i) && !input_accepts_any_float(n, i);
  }

  void index_names() {
    for (size_t i = 0; i < n_; ++i) {
      const Node& n = g_.nodes[i];
      if (!n.name.empty()) by_name_[n.name].push_back(i);
      if (const auto* c = composite(i)) by_name_[c->second].push_back(i);  // pins name composites
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty()) producer_[n.outputs[k]] = {i, k};
    }
  }

  void build_edges() {
    preds_.assign(n_, {});
    succs_.assign(n_, {});
    arrivals_.assign(n_, {});
    carries_.assign(n_, false);
    active_.assign(n_, false);
    constant_only_.assign(n_, false);
    for (size_t i = 0; i < n_; ++i) {
      const Node& n = g_.nodes[i];
      for (const auto& v : n.inputs) carries_[i] = carries_[i] || is_convertible(type_of(v));
      for (const auto& v : n.outputs) carries_[i] = carries_[i] || is_convertible(type_of(v));
      if (has_subgraph(n)) continue;  // kept FP32 as a whole: no edges in or out
      bool all_neutral = true;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (!carrying_input(n, k)) continue;
        active_[i] = true;
        const std::string& v = n.inputs[k];
        Arrival a;
        a.value = v;
        auto p = producer_.find(v);
        if (p != producer_.end()) {
          const size_t src = p->second.first;
          const Node& pn = g_.nodes[src];
          if (active_[src] && !output_stays_fp32(pn, p->second.second)) {
            a.kind = constant_only_[src] ? Arrival::Neutral : Arrival::FromNode;
            a.node = src;
            if (std::find(preds_[i].begin(), preds_[i].end(), src) == preds_[i].end()) {
              preds_[i].push_back(src);
              succs_[src].push_back(i);
            }
          } else if (pn.op_type == "Constant" || pn.op_type == "ConstantOfShape") {
            a.kind = Arrival::Neutral;
          } else {
            a.type = type_of(v);
          }
          a.label = cat("'", label(src), "'");
        } else if (g_.initializers.count(v)) {
          a.kind = Arrival::Neutral;
          a.label = cat("initializer '", v, "'");
        } else {
          a.type = type_of(v);
          a.label = cat("graph input '", v, "'");
        }
        all_neutral = all_neutral && a.kind == Arrival::Neutral;
        arrivals_[i].push_back(std::move(a));
      }
      constant_only_[i] = active_[i] && all_neutral;
    }
  }

  std::vector<size_t> named(const std::string& name, const char* what) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end())
      throw Error(cat(what, ": no node named '", name, "' in graph '", g_.name, "'"));
    return it->second;
  }

  void resolve_pins_and_follow() {
    for (const auto& name : o_.fp32_nodes)
      for (size_t i : named(name, "--fp32-nodes")) set(i, State::F32, "pinned by --fp32-nodes");
    const std::string low_flag = "--fp16-nodes";  // the flag's name for bf16 too
    for (const auto& name : o_.low_nodes)
      for (size_t i : named(name, low_flag.c_str())) {
        if (o_.fp32_nodes.count(name))
          throw Error(cat("node '", name, "' is pinned both by --fp32-nodes and ", low_flag));
        set(i, State::Low, cat("pinned by ", low_flag));
      }
    for (const auto& [node, target] : o_.follow) {
      const size_t t = named(target, "follow")[0];
      for (size_t i : named(node, "follow")) follow_[i] = static_cast<long>(t);
    }
    for (size_t i = 0; i < n_; ++i) {  // a follow chain must end
      size_t at = i, steps = 0;
      while (follow_[at] >= 0) {
        at = static_cast<size_t>(follow_[at]);
        if (++steps > n_) throw Error(cat("follow: a cycle through node '", label(i), "'"));
      }
    }
  }

  void set(size_t i, State s, std::string why) {
    state_[i] = s;
    reason_[i] = std::move(why);
  }

  void step_fixed() {
    for (size_t i = 0; i < n_; ++i) {
      const Node& n = g_.nodes[i];
      if (!carries_[i]) {
        set(i, State::F32, "no fp32/fp16/bf16 values (integer or float64 only)");
        continue;
      }
      if (has_subgraph(n)) {
        set(i, State::F32, "has a subgraph: kept fp32, body untouched");
        continue;
      }
      if (state_[i] != State::Open) continue;  // pinned
      if (!active_[i]) {
        if (n.op_type == "Cast") {
          const DType to = cast_target(n);
          set(i, to == o_.low ? State::Low : State::F32,
              cat("Cast to ", precision_name(to), ": its output type is the model's"));
        } else if (n.op_type == "Shape" || n.op_type == "Size") {
          set(i, State::F32, "reads only the shape: no cast");
        } else {
          set(i, State::F32, "no input that carries precision: output type kept");
        }
        continue;
      }
      if (follow_[i] >= 0) continue;
      switch (list(i)) {
        case OpList::Allow:
          set(i, State::Low, list_reason(i, "allow list"));
          break;
        case OpList::Deny:
          set(i, State::F32, list_reason(i, "deny list"));
          break;
        case OpList::None:
          set(i, State::F32,
              n.domain == kMlDomain
                  ? std::string("ai.onnx.ml op: kept fp32 (classical-ML ops take no float16)")
                  : list_reason(i, "not in any list"));
          break;
        case OpList::Infer:
          keep_fp32_for_range(i);
          break;
        default:
          break;
      }
    }
  }

  // The float constant behind value v (an initializer or a Constant node's value, directly or
  // through passes_values ops).
  const ConstRange& const_range(const std::string& v) {
    if (auto it = ranges_.find(v); it != ranges_.end()) return it->second;
    ranges_[v] = ConstRange{};  // a malformed cycle through v ends here
    ConstRange r;
    if (auto in = g_.initializers.find(v); in != g_.initializers.end()) {
      if (is_convertible(in->second.dtype())) {
        r.max_abs = max_finite_abs(in->second);
        r.what = cat("initializer '", v, "'");
      }
    } else if (auto p = producer_.find(v); p != producer_.end()) {
      const size_t src = p->second.first;
      const Node& pn = g_.nodes[src];
      const Attribute* a = nullptr;
      if (pn.op_type == "Constant" && (pn.domain.empty() || pn.domain == "ai.onnx")) {
        if ((a = pn.attr("value")) && a->kind == Attribute::Kind::Tensor &&
            is_convertible(a->t.dtype())) {
          r.max_abs = max_finite_abs(a->t);
        } else if ((a = pn.attr("value_float")) && a->kind == Attribute::Kind::Float) {
          r.max_abs = std::isfinite(a->f) ? std::fabs(a->f) : 0.0;
        } else if ((a = pn.attr("value_floats")) && a->kind == Attribute::Kind::Floats) {
          r.max_abs = 0;
          for (float f : a->floats)
            if (std::isfinite(f))
              r.max_abs = std::max(r.max_abs, static_cast<double>(std::fabs(f)));
        }
        r.what = cat("constant '", label(src), "'");
      } else if (passes_values(pn) && p->second.second == 0) {
        const ConstRange up = const_range(pn.inputs[0]);
        if (up.max_abs >= 0) r = {up.max_abs, cat(up.what, " through '", label(src), "'")};
      }
    }
    return ranges_[v] = r;
  }

  // Step A's range rule: an infer node reading a float constant that FP16 cannot hold (not all
  // zero; max |x| above FP16's largest value, or, for Mul and Div, below its smallest normal)
  // stays FP32.
  void keep_fp32_for_range(size_t i) {
    if (o_.low != DType::F16 || !o_.out_of_range_fp32) return;
    const Node& n = g_.nodes[i];
    const bool factor =
        (n.domain.empty() || n.domain == "ai.onnx") && (n.op_type == "Mul" || n.op_type == "Div");
    for (const Arrival& a : arrivals_[i]) {
      if (a.kind != Arrival::Neutral) continue;
      const ConstRange& r = const_range(a.value);
      if (r.max_abs <= 0) continue;  // not a float constant, or all zeros
      std::ostringstream m;
      m << std::setprecision(2) << r.max_abs;
      if (r.max_abs < kF16MinNormal && factor)
        set(i, State::F32,
            cat(r.what, ": max |x| = ", m.str(), " is below float16's smallest normal 6.1e-05"));
      else if (r.max_abs > kF16Max)
        set(i, State::F32, cat(r.what, ": max |x| = ", m.str(), " is beyond float16's max 65504"));
      else
        continue;
      range_root_[i] = r.what;
      return;
    }
  }

  bool open_infer_or_clear(size_t i) const {
    const OpList l = list(i);
    return state_[i] == State::Open && follow_[i] < 0 && (l == OpList::Infer || l == OpList::Clear);
  }

  // Deny spreads forward through infer and clear nodes until an allow (or any decided) node; so
  // does FP32 from a node kept FP32 by the range rule.
  void step_deny() {
    for (size_t root = 0; root < n_; ++root) {
      const bool range = !range_root_[root].empty();
      if ((list(root) != OpList::Deny && !range) || state_[root] != State::F32 ||
          follow_[root] >= 0)
        continue;
      const std::string why = range ? cat("follows fp32 node '", label(root), "' (",
                                          range_root_[root], " out of float16's range)")
                                    : cat("follows deny node '", label(root), "'");
      std::vector<size_t> stack = {root};
      while (!stack.empty()) {
        const size_t at = stack.back();
        stack.pop_back();
        for (size_t s : succs_[at]) {
          if (!open_infer_or_clear(s)) continue;
          set(s, State::F32, why);
          stack.push_back(s);
        }
      }
    }
  }

  // Infer/clear nodes between low nodes become low. fwd: a low node upstream (fwd[i] names it),
  // or only initializers and graph inputs upstream (source[i]); bwd: a low node downstream.
  void step_between() {
    std::vector<std::string> fwd(n_), bwd(n_);
    std::vector<bool> source(n_, false), has_fwd(n_, false), has_bwd(n_, false);
    for (size_t i = 0; i < n_; ++i) {
      if (!open_infer_or_clear(i)) continue;
      bool all_sources = true;
      for (size_t p : preds_[i]) {
        all_sources = all_sources && source[p];
        if (!fwd[i].empty()) continue;
        if (state_[p] == State::Low)
          fwd[i] = label(p);
        else if (!fwd[p].empty())
          fwd[i] = fwd[p];
      }
      source[i] = fwd[i].empty() && all_sources;
      has_fwd[i] = !fwd[i].empty() || source[i];
    }
    for (size_t r = n_; r-- > 0;) {
      if (!open_infer_or_clear(r) || !has_fwd[r]) continue;
      for (size_t s : succs_[r]) {
        if (state_[s] == State::Low) {
          bwd[r] = label(s);
        } else if (has_bwd[s]) {
          bwd[r] = bwd[s];
        } else {
          continue;
        }
        has_bwd[r] = true;
        break;
      }
    }
    for (size_t i = 0; i < n_; ++i) {
      if (!has_fwd[i] || !has_bwd[i]) continue;
      if (fwd[i].empty())
        set(i, State::Low, cat("feeds ", low_, " node '", bwd[i], "' from initializers/inputs"));
      else
        set(i, State::Low, cat("between ", low_, " nodes '", fwd[i], "' and '", bwd[i], "'"));
    }
  }

  // Resolves one open node if its neighbours allow it; returns whether it did.
  bool resolve(size_t i, bool force) {
    if (follow_[i] >= 0) {
      const size_t t = static_cast<size_t>(follow_[i]);
      if (state_[t] == State::Open) return false;
      set(i, state_[t], cat("follows forward node '", label(t), "'"));
      return true;
    }
    if (list(i) == OpList::Infer && !constant_only_[i]) {
      std::vector<std::string> lows;
      bool open = false;
      for (const Arrival& a : arrivals_[i]) {
        if (a.kind == Arrival::Neutral) continue;
        const State s = a.kind == Arrival::FromNode ? state_[a.node]
                        : a.type == o_.low          ? State::Low
                                                    : State::F32;
        if (s == State::F32) {
          set(i, State::F32, cat("infer: input fp32 from ", a.label));
          return true;
        }
        if (s == State::Open) open = true;
        if (s == State::Low && lows.size() < 3) lows.push_back(a.label);
      }
      if (open && !force) return false;
      if (open) {
        set(i, State::F32, "infer: inputs undecided, kept fp32");
      } else {
        std::string from;
        for (const auto& l : lows) from += (from.empty() ? "" : ", ") + l;
        set(i, State::Low, cat("infer: inputs ", low_, " from ", from));
      }
      return true;
    }
    // Clear nodes, and infer nodes that read only constants: join a low neighbour.
    bool open = false;
    for (size_t p : preds_[i]) {
      if (state_[p] == State::Low) {
        set(i, State::Low, cat("joins ", low_, " neighbour '", label(p), "'"));
        return true;
      }
      open = open || state_[p] == State::Open;
    }
    for (size_t s : succs_[i]) {
      if (state_[s] == State::Low) {
        set(i, State::Low, cat("joins ", low_, " neighbour '", label(s), "'"));
        return true;
      }
      open = open || state_[s] == State::Open;
    }
    if (open && !force) return false;
    set(i, State::F32,
        constant_only_[i] ? "reads only constants, no " + low_ + " neighbour"
                          : "clear: no " + low_ + " neighbour");
    return true;
  }

  void step_rest() {
    for (;;) {
      bool changed = true;
      while (changed) {
        changed = false;
        for (size_t i = 0; i < n_; ++i)
          if (state_[i] == State::Open && resolve(i, false)) changed = true;
      }
      size_t first = n_;
      for (size_t i = 0; i < n_ && first == n_; ++i)
        if (state_[i] == State::Open && follow_[i] < 0) first = i;
      if (first == n_) break;
      resolve(first, true);
    }
  }
};

}  // namespace

PrecisionPlan paint(const Graph& g, const PaintOptions& options) {
  return Painter(g, options).run();
}

const NodePrecision* PrecisionPlan::find(const std::string& node) const {
  for (const auto& p : nodes)
    if (p.node == node) return &p;
  return nullptr;
}

size_t PrecisionPlan::count(DType d) const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const NodePrecision& p) {
    return p.carries_floats && p.dtype == d;
  }));
}

size_t PrecisionPlan::count_without_floats() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const NodePrecision& p) { return !p.carries_floats; }));
}

std::string PrecisionPlan::to_string() const {
  std::vector<std::string> names;
  size_t wn = 4, wo = 2;
  for (size_t i = 0; i < nodes.size(); ++i) {
    names.push_back(nodes[i].node.empty() ? cat("#", i) : nodes[i].node);
    wn = std::max(wn, std::min<size_t>(names.back().size(), 48));
    wo = std::max(wo, std::min<size_t>(nodes[i].op_type.size(), 32));
  }
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(wn)) << "node"
     << "  " << std::setw(static_cast<int>(wo)) << "op"
     << "  precision  reason\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodePrecision& p = nodes[i];
    os << std::setw(static_cast<int>(wn)) << names[i] << "  " << std::setw(static_cast<int>(wo))
       << p.op_type << "  " << std::setw(9) << (p.carries_floats ? precision_name(p.dtype) : "-")
       << "  " << p.reason << "\n";
  }
  os << "totals: " << nodes.size() << " nodes, " << count(low) << " " << precision_name(low) << ", "
     << count(DType::F32) << " fp32";
  if (const size_t other = count_without_floats()) os << ", " << other << " without float values";
  os << "\n";
  return os.str();
}

}  // namespace oat::convert
