#include "runtime/shape_fold.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <unordered_map>

#include "runtime/error.h"
#include "runtime/executor.h"

namespace oat {

namespace {

std::atomic<ShapeInferer> g_inferer{nullptr};

// A one-node Executor runs composite nodes through lower_composites, which folds: the folding
// this thread is doing must not start again inside it.
thread_local bool t_folding = false;

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Deterministic ops that folding may evaluate (no randomness, no state).
const std::set<std::string>& foldable_ops() {
  static const std::set<std::string> ops = {
      "Constant", "Shape", "Size", "Identity", "Gather", "GatherElements", "GatherND", "Concat",
      "Unsqueeze", "Squeeze", "Slice", "Cast", "CastLike", "Add", "Sub", "Mul", "Div", "Mod",
      "Neg", "Abs", "Floor", "Ceil", "Round", "Sqrt", "Sign", "Min", "Max", "Sum", "Equal",
      "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
      "Range", "ConstantOfShape", "Expand", "Reshape", "Flatten", "Transpose", "Tile", "Split",
      "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax", "ReduceMean", "ScatterND",
      "ScatterElements"};
  return ops;
}

// Ops that move elements of their first input (or, Concat, of every input) without computing:
// a partly known shape vector goes through them element by element.
bool moves_elements(const std::string& op) {
  return op == "Identity" || op == "Gather" || op == "Slice" || op == "Squeeze" ||
         op == "Unsqueeze" || op == "Reshape" || op == "Concat";
}

// Elementwise integer arithmetic on shape values (B * nW, H / ws): a partly known operand gives
// a partly known result.
bool is_integer_arithmetic(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod";
}

// A partly known int64 tensor (from Shape of a value with some symbolic dims).
struct Partial {
  Shape shape;
  std::vector<std::optional<int64_t>> elems;  // row-major
};

class Folder {
 public:
  Folder(Graph& g, const ShapeFoldOptions& o, bool trust_value_info)
      : g_(g), o_(o), trust_value_info_(trust_value_info) {}

  // One pass over the nodes; returns the number of nodes removed.
  size_t pass() {
    known_.clear();
    partial_.clear();
    size_t refined = 0;
    for (const auto& [name, t] : g_.initializers)
      if (t.defined() && !is_floating(t.dtype()) && t.numel() <= o_.max_elements)
        known_[name] = t;
    // 0: kept; 1: folded (its outputs are known); 2: removed when nothing kept reads its outputs
    // (they are partly known, as a Shape of a value with a symbolic batch, or a floating Constant).
    std::vector<char> state(g_.nodes.size(), 0);
    std::set<std::string> graph_outputs;
    for (const auto& v : g_.outputs) graph_outputs.insert(v.name);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!default_domain(n.domain) || !foldable_ops().count(n.op_type)) continue;
      // A node writing a graph output stays; what is known of its value still helps others.
      const bool writes_output =
          std::any_of(n.outputs.begin(), n.outputs.end(),
                      [&](const std::string& o) { return graph_outputs.count(o) != 0; });
      std::vector<Tensor> outs;
      if (n.op_type == "Shape" || n.op_type == "Size")
        outs = shape_of_node(n);
      else if (all_known(n))
        outs = evaluate(n);
      else if (moves_elements(n.op_type))
        outs = track(n);
      else if (is_integer_arithmetic(n.op_type))
        outs = arithmetic(n);
      if (outs.empty()) {
        if (n.op_type == "Reshape" || n.op_type == "Expand" || n.op_type == "ConstantOfShape")
          refined += refine_from_partial_shape(n);
        if (!writes_output && !n.outputs.empty() &&
            std::all_of(n.outputs.begin(), n.outputs.end(),
                        [&](const std::string& o) { return partial_.count(o) != 0; }))
          state[i] = 2;
        continue;
      }
      for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
        if (!n.outputs[k].empty()) known_[n.outputs[k]] = outs[k];
      // Floating Constant nodes that something kept reads stay: they are constants already, and
      // keep their name for precision pins. Everything else folded is replaced by initializers.
      const bool float_constant =
          n.op_type == "Constant" && !outs.empty() && is_floating(outs[0].dtype());
      if (!writes_output) state[i] = float_constant ? 2 : 1;
    }
    // Backwards: what the kept nodes (and the graph outputs) read decides which folded values
    // become initializers and which partly known ones are dead.
    std::set<std::string> read = graph_outputs;
    std::vector<char> drop(g_.nodes.size(), 0);
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      const Node& n = g_.nodes[i];
      const bool unread = std::none_of(n.outputs.begin(), n.outputs.end(),
                                       [&](const std::string& o) { return read.count(o) != 0; });
      if (state[i] == 1 || (state[i] == 2 && unread))
        drop[i] = 1;
      else
        add_reads(n, read);
    }
    std::vector<Node> kept;
    size_t removed = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!drop[i]) {
        kept.push_back(std::move(g_.nodes[i]));
        continue;
      }
      ++removed;
      if (state[i] != 1) continue;
      for (const auto& o : g_.nodes[i].outputs) {
        if (o.empty() || !read.count(o)) continue;
        const Tensor& t = known_.at(o);
        g_.initializers[o] = t;
        ValueInfo vi;
        vi.name = o;
        vi.dtype = t.dtype();
        std::vector<Dim> d;
        for (int64_t s : t.shape()) d.push_back(Dim{s, ""});
        vi.shape = d;
        g_.value_info[o] = vi;
      }
    }
    g_.nodes = std::move(kept);
    return removed + refined;
  }

 private:
  // The values a node reads: its inputs and, through subgraphs (If, Loop, Scan), any name those
  // read from the enclosing scope.
  static void add_reads(const Node& n, std::set<std::string>& read) {
    read.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& [k, a] : n.attrs) {
      if (a.g)
        for (const Node& m : a.g->nodes) add_reads(m, read);
      for (const auto& sg : a.graphs)
        if (sg)
          for (const Node& m : sg->nodes) add_reads(m, read);
    }
  }

  // What is known of a value's dims: a known or initializer tensor's, else the value_info's.
  std::optional<std::vector<Dim>> dims(const std::string& v) const {
    const Tensor* t = nullptr;
    if (auto it = known_.find(v); it != known_.end()) t = &it->second;
    else if (auto it2 = g_.initializers.find(v); it2 != g_.initializers.end()) t = &it2->second;
    if (t && t->defined()) {
      std::vector<Dim> d;
      for (int64_t s : t->shape()) d.push_back(Dim{s, ""});
      return d;
    }
    // A graph input's declared dims hold (the Executor checks them) except the first, which any
    // batch may replace.
    for (const auto& in : g_.inputs)
      if (in.name == v) {
        auto d = in.shape;
        if (d && !d->empty() && (*d)[0].fixed()) (*d)[0] = Dim{-1, ""};
        return d;
      }
    if (!trust_value_info_) return std::nullopt;
    if (auto it = g_.value_info.find(v); it != g_.value_info.end()) return it->second.shape;
    for (const auto& out : g_.outputs)
      if (out.name == v) return out.shape;
    return std::nullopt;
  }

  // A Reshape / Expand / ConstantOfShape whose shape input is partly known: its output's dims
  // are known where the elements are (Reshape: 0 copies the input's dim, -1 is computed when
  // everything else is fixed), which libonnx (1.12) does not derive. Writes value_info when it
  // fixes more than is known; returns 1 then.
  size_t refine_from_partial_shape(const Node& n) {
    const size_t si = n.op_type == "ConstantOfShape" ? 0 : 1;
    if (si >= n.inputs.size() || n.outputs.empty() || n.outputs[0].empty()) return 0;
    auto pit = partial_.find(n.inputs[si]);
    if (pit == partial_.end() || pit->second.shape.size() != 1) return 0;
    const auto& el = pit->second.elems;
    std::vector<Dim> out(el.size(), Dim{-1, ""});
    auto in = n.op_type == "ConstantOfShape" ? std::nullopt : dims(n.inputs[0]);
    if (n.op_type == "Reshape") {
      const bool allowzero = n.attr_int("allowzero", 0) != 0;
      int64_t fixed_product = 1, minus_one = -1;
      bool all_fixed = true;
      for (size_t k = 0; k < el.size(); ++k) {
        if (!el[k]) {
          all_fixed = false;
          continue;
        }
        int64_t v = *el[k];
        if (v == 0 && !allowzero) {
          if (in && k < in->size() && (*in)[k].fixed()) v = (*in)[k].value;
          else {
            all_fixed = false;
            continue;
          }
        }
        if (v == -1) {
          minus_one = static_cast<int64_t>(k);
          continue;
        }
        out[k] = Dim{v, ""};
        fixed_product *= v;
      }
      if (minus_one >= 0 && all_fixed && in && fixed_product > 0) {
        int64_t total = 1;
        bool in_fixed = true;
        for (const Dim& d : *in) {
          if (!d.fixed()) in_fixed = false;
          total *= std::max<int64_t>(d.value, 0);
        }
        if (in_fixed && total % fixed_product == 0)
          out[static_cast<size_t>(minus_one)] = Dim{total / fixed_product, ""};
      }
    } else if (n.op_type == "Expand") {
      if (!in) return 0;
      const size_t r = std::max(in->size(), el.size());
      out.assign(r, Dim{-1, ""});
      for (size_t k = 0; k < r; ++k) {
        const int64_t ik = static_cast<int64_t>(k) - static_cast<int64_t>(r - in->size());
        const int64_t ek = static_cast<int64_t>(k) - static_cast<int64_t>(r - el.size());
        const Dim a = ik >= 0 ? (*in)[static_cast<size_t>(ik)] : Dim{1, ""};
        const std::optional<int64_t> b = ek >= 0 ? el[static_cast<size_t>(ek)] : std::optional<int64_t>(1);
        if (a.fixed() && b) out[k] = Dim{std::max(a.value, *b), ""};
        else if (a.fixed() && a.value > 1) out[k] = a;
        else if (b && *b > 1) out[k] = Dim{*b, ""};
      }
    } else {
      for (size_t k = 0; k < el.size(); ++k)
        if (el[k]) out[k] = Dim{*el[k], ""};
    }
    auto count_fixed = [](const std::vector<Dim>& d) {
      return std::count_if(d.begin(), d.end(), [](const Dim& x) { return x.fixed(); });
    };
    ValueInfo& vi = g_.value_info[n.outputs[0]];
    if (vi.shape && (vi.shape->size() != out.size() || count_fixed(*vi.shape) >= count_fixed(out)))
      return 0;
    if (vi.shape)  // keep the symbolic names of dims that stay unknown
      for (size_t k = 0; k < out.size(); ++k)
        if (!out[k].fixed()) out[k] = (*vi.shape)[k];
    vi.name = n.outputs[0];
    if (vi.dtype == DType::Undefined && n.op_type != "ConstantOfShape") {
      if (auto it = g_.value_info.find(n.inputs[0]); it != g_.value_info.end())
        vi.dtype = it->second.dtype;
    }
    vi.shape = out;
    return 1;
  }

  bool all_known(const Node& n) const {
    for (const auto& in : n.inputs)
      if (!in.empty() && !known_.count(in)) return false;
    return true;
  }

  // Shape (opset 15: start/end) and Size of a value whose dims are (partly) fixed.
  std::vector<Tensor> shape_of_node(const Node& n) {
    if (n.inputs.empty() || n.outputs.empty()) return {};
    auto d = dims(n.inputs[0]);
    if (!d) return {};
    if (n.op_type == "Size") {
      int64_t p = 1;
      for (const Dim& x : *d) {
        if (!x.fixed()) return {};
        p *= x.value;
      }
      return {Tensor::scalar<int64_t>(p)};
    }
    const int64_t r = static_cast<int64_t>(d->size());
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    Partial p;
    p.shape = {end - start};
    bool all = true;
    for (int64_t j = start; j < end; ++j) {
      const Dim& x = (*d)[static_cast<size_t>(j)];
      if (x.fixed()) {
        p.elems.push_back(x.value);
      } else {
        p.elems.push_back(std::nullopt);
        all = false;
      }
    }
    return settle(n, std::move(p), all);
  }

  // Whether evaluating n could make a tensor over the limit (checked before running it).
  bool too_large(const Node& n) const {
    auto val = [&](size_t i) -> const Tensor* {
      return i < n.inputs.size() && !n.inputs[i].empty() ? &known_.at(n.inputs[i]) : nullptr;
    };
    auto product = [&](const std::vector<int64_t>& v) {
      double p = 1;
      for (int64_t x : v) p *= static_cast<double>(std::max<int64_t>(x, 1));
      return p;
    };
    const double limit = static_cast<double>(o_.max_elements);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (const Tensor* t = val(i); t && t->numel() > o_.max_elements) return true;
    if (n.op_type == "ConstantOfShape" || n.op_type == "Expand") {
      const Tensor* s = val(n.op_type == "Expand" ? 1 : 0);
      return s && product(s->to_int_vector()) > limit;
    }
    if (n.op_type == "Tile") {
      const Tensor* x = val(0);
      const Tensor* r = val(1);
      return x && r && static_cast<double>(x->numel()) * product(r->to_int_vector()) > limit;
    }
    if (n.op_type == "Range") {
      const Tensor* s = val(0);
      const Tensor* l = val(1);
      const Tensor* d = val(2);
      if (!s || !l || !d || s->numel() != 1 || l->numel() != 1 || d->numel() != 1) return true;
      const double step = d->item_as_double();
      if (step == 0) return true;
      return (l->item_as_double() - s->item_as_double()) / step > limit;
    }
    return false;
  }

  // Runs n with the given inputs by a one-node Executor (CPU kernels); {} when it cannot.
  std::vector<Tensor> run_one(const Node& n, const std::map<std::string, Tensor>& inputs) const {
    Graph one;
    one.opsets = g_.opsets;
    one.initializers = inputs;
    one.nodes.push_back(n);
    std::vector<std::string> fetch;
    for (const auto& o : n.outputs)
      if (!o.empty()) {
        one.outputs.push_back(ValueInfo{o, DType::Undefined, std::nullopt});
        fetch.push_back(o);
      }
    if (fetch.empty()) return {};
    try {
      Executor exec(one);
      auto r = exec.run({}, fetch);
      std::vector<Tensor> outs;
      for (const auto& o : n.outputs) {
        if (o.empty()) {
          outs.emplace_back();
          continue;
        }
        const Tensor& t = r.at(o);
        if (!t.defined() || t.numel() > o_.max_elements) return {};
        outs.push_back(t);
      }
      return outs;
    } catch (const std::exception&) {
      return {};  // not evaluable here (an unsupported form): the node stays
    }
  }

  std::vector<Tensor> evaluate(const Node& n) {
    if (too_large(n)) return {};
    std::map<std::string, Tensor> in;
    for (const auto& v : n.inputs)
      if (!v.empty()) in[v] = known_.at(v);
    return run_one(n, in);
  }

  // Add/Sub/Mul/Div/Mod of two int64 operands, at least one partly known, both of rank <= 1:
  // computed with 1 in place of each unknown element (never a zero divisor), the result's
  // elements known where every operand element they read is.
  std::vector<Tensor> arithmetic(const Node& n) {
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0].empty()) return {};
    std::map<std::string, Tensor> in;
    std::vector<std::vector<char>> known_at(2);
    std::vector<int64_t> sizes(2);
    bool any_partial = false;
    for (size_t i = 0; i < 2; ++i) {
      const std::string& v = n.inputs[i];
      Partial e;
      bool partial = false;
      if (!elements_of(v, e, partial)) return {};
      any_partial = any_partial || partial;
      const Shape& shape = e.shape;
      const auto& elems = e.elems;
      if (shape.size() > 1) return {};
      std::vector<int64_t> vals;
      for (const auto& e : elems) {
        vals.push_back(e ? *e : 1);
        known_at[i].push_back(e ? 1 : 0);
      }
      sizes[i] = static_cast<int64_t>(elems.size());
      in[v] = Tensor::from_vector<int64_t>(shape, vals);
    }
    if (!any_partial || n.inputs[0] == n.inputs[1]) return {};
    std::vector<Tensor> r = run_one(n, in);
    if (r.size() != 1 || r[0].dtype() != DType::I64 || r[0].rank() > 1) return {};
    const std::vector<int64_t> vals = r[0].to_int_vector();
    Partial p;
    p.shape = r[0].shape();
    bool all = true;
    for (size_t j = 0; j < vals.size(); ++j) {
      bool ok = true;
      for (size_t i = 0; i < 2; ++i)  // an operand of one element broadcasts
        ok = ok && known_at[i][sizes[i] == 1 ? 0 : j];
      p.elems.push_back(ok ? std::optional<int64_t>(vals[j]) : std::nullopt);
      all = all && ok;
    }
    if (all) return {r[0]};
    partial_[n.outputs[0]] = std::move(p);
    return {};
  }

  // Element tracking through ops that move elements: each partly known (or, for Concat, known)
  // data input is replaced by the indices of its elements in one table, the node runs on the
  // indices, and the output's elements are looked up. A fully known output is a constant; a
  // partly known one is recorded.
  std::vector<Tensor> track(const Node& n) {
    if (n.outputs.size() != 1 || n.outputs[0].empty()) return {};
    const size_t n_data = n.op_type == "Concat" ? n.inputs.size() : 1;
    std::vector<std::optional<int64_t>> table;
    std::map<std::string, Tensor> in;
    bool any_partial = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& v = n.inputs[i];
      if (v.empty()) continue;
      if (i < n_data) {
        if (in.count(v)) continue;  // the same value twice: one set of indices
        Partial e;
        bool partial = false;
        if (!elements_of(v, e, partial)) return {};
        any_partial = any_partial || partial;
        std::vector<int64_t> idx;
        for (auto& x : e.elems) {
          idx.push_back(static_cast<int64_t>(table.size()));
          table.push_back(x);
        }
        in[v] = Tensor::from_vector<int64_t>(e.shape, idx);
      } else {
        auto k = known_.find(v);
        if (k == known_.end()) return {};
        in[v] = k->second;
      }
    }
    if (!any_partial) return {};
    std::vector<Tensor> r = run_one(n, in);
    if (r.size() != 1 || r[0].dtype() != DType::I64) return {};
    Partial p;
    p.shape = r[0].shape();
    bool all = true;
    for (int64_t j : r[0].to_int_vector()) {
      if (j < 0 || j >= static_cast<int64_t>(table.size())) return {};
      p.elems.push_back(table[static_cast<size_t>(j)]);
      if (!p.elems.back()) all = false;
    }
    return settle(n, std::move(p), all);
  }

  // n's output p: a constant when every element is known (returned), else recorded as partly
  // known (nothing returned).
  std::vector<Tensor> settle(const Node& n, Partial p, bool all) {
    if (all) {
      std::vector<int64_t> v;
      for (const auto& e : p.elems) v.push_back(*e);
      return {Tensor::from_vector<int64_t>(p.shape, v)};
    }
    partial_[n.outputs[0]] = std::move(p);
    return {};
  }

  // v as a partly known int64 vector: its tracked elements, or a known int64 tensor's. False when
  // v is neither; `partial` says whether it was a tracked one.
  bool elements_of(const std::string& v, Partial& out, bool& partial) const {
    if (auto it = partial_.find(v); it != partial_.end()) {
      out = it->second;
      partial = true;
      return true;
    }
    auto k = known_.find(v);
    if (k == known_.end() || k->second.dtype() != DType::I64) return false;
    out.shape = k->second.shape();
    out.elems.clear();
    for (int64_t x : k->second.to_int_vector()) out.elems.push_back(x);
    partial = false;
    return true;
  }

  Graph& g_;
  const ShapeFoldOptions& o_;
  const bool trust_value_info_;
  std::unordered_map<std::string, Tensor> known_;
  std::unordered_map<std::string, Partial> partial_;
};

}  // namespace

void set_shape_inferer(ShapeInferer f) { g_inferer.store(f); }
ShapeInferer shape_inferer() { return g_inferer.load(); }

ShapeFoldReport fold_shape_constants(Graph& g, const ShapeFoldOptions& options) {
  ShapeFoldReport rep;
  if (t_folding) return rep;
  t_folding = true;
  struct Reset {
    ~Reset() { t_folding = false; }
  } reset;
  // The executor runs a graph with any batch (dim 0 of the inputs), even where the model fixed
  // it (exported with batch 1): a dim that shape inference derived from a fixed batch must not
  // be folded. Such graphs are folded with the batch made symbolic and their value_info
  // re-inferred from scratch; without an inferer only what needs no value_info is folded.
  ShapeInferer infer = shape_inferer();
  const bool fixed_batch = std::any_of(g.inputs.begin(), g.inputs.end(), [](const ValueInfo& v) {
    return v.shape && !v.shape->empty() && (*v.shape)[0].fixed();
  });
  std::map<std::string, ValueInfo> saved_info;
  std::vector<ValueInfo> saved_inputs;
  if (fixed_batch && infer) {
    saved_info = g.value_info;
    saved_inputs = g.inputs;
    for (auto& v : g.inputs)
      if (v.shape && !v.shape->empty() && (*v.shape)[0].fixed())
        (*v.shape)[0] = Dim{-1, "oat_fold_batch"};
    g.value_info.clear();
    infer(g);
  }
  Folder f(g, options, /*trust_value_info=*/!fixed_batch || infer);
  for (int round = 0; round < options.max_rounds; ++round) {
    const size_t removed = f.pass();
    if (removed == 0) break;
    rep.folded_nodes += removed;
    ++rep.rounds;
    if (infer) infer(g);
  }
  if (fixed_batch && infer) {
    // Back to the declared inputs, and to what was known before wherever it fixed more.
    g.inputs = std::move(saved_inputs);
    for (auto& [name, old] : saved_info) {
      auto it = g.value_info.find(name);
      if (it == g.value_info.end()) {
        g.value_info[name] = old;
        continue;
      }
      ValueInfo& now = it->second;
      if (now.dtype == DType::Undefined) now.dtype = old.dtype;
      if (!now.shape) {
        now.shape = old.shape;
      } else if (old.shape && old.shape->size() == now.shape->size()) {
        for (size_t k = 0; k < now.shape->size(); ++k)
          if (!(*now.shape)[k].fixed()) (*now.shape)[k] = (*old.shape)[k];
      }
    }
  }
  return rep;
}

}  // namespace oat
