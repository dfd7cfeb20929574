#include "train/training_graph.h"

#include <algorithm>
#include <optional>
#include <set>

#include "runtime/grad_type.h"
#include "runtime/multi_update.h"
#include "runtime/transpose_fold.h"
#include "runtime/working_type.h"
#include "train/autodiff/gradient_builder.h"
#include "train/initializer_aliases.h"

namespace oat::train {

const char* loss_name(LossKind k) {
  switch (k) {
    case LossKind::CrossEntropy: return "cross-entropy";
    case LossKind::MSE: return "mse";
    case LossKind::L1: return "l1";
    case LossKind::BCEWithLogits: return "bce-with-logits";
    case LossKind::Model: return "model";
  }
  return "?";
}

LossKind parse_loss(const std::string& s) {
  for (LossKind k : {LossKind::CrossEntropy, LossKind::MSE, LossKind::L1, LossKind::BCEWithLogits,
                     LossKind::Model})
    if (s == loss_name(k)) return k;
  throw Error(cat("unknown loss '", s, "' (cross-entropy, mse, l1, bce-with-logits, model)"));
}

OptimizerKind parse_optimizer(const std::string& s) {
  if (s == "sgd") return OptimizerKind::SGD;
  if (s == "adam") return OptimizerKind::Adam;
  if (s == "adamw") return OptimizerKind::AdamW;
  throw Error(cat("unknown optimizer '", s, "' (sgd, adam, adamw)"));
}

bool wildcard_match(const std::string& p, const std::string& s) {
  // Iterative glob with backtracking to the last '*'.
  size_t i = 0, j = 0, star = std::string::npos, mark = 0;
  while (j < s.size()) {
    if (i < p.size() && (p[i] == '?' || p[i] == s[j])) {
      ++i;
      ++j;
    } else if (i < p.size() && p[i] == '*') {
      star = i++;
      mark = j;
    } else if (star != std::string::npos) {
      i = star + 1;
      j = ++mark;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}

namespace {

std::string dims_str(const std::vector<Dim>& d) {
  ValueInfo v;
  v.shape = d;
  return v.shape_string();
}

// Whether per-sample labels of shape `labels` fit the per-sample output dims `out` (a symbolic
// output dimension fits any size).
bool labels_fit(const std::vector<Dim>& out, const Shape& labels) {
  if (out.size() != labels.size()) return false;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].fixed() && out[i].value != labels[i]) return false;
  return true;
}

// The output's dims without dimension 0 (the batch) and without `axis`.
std::vector<Dim> without_axis(const std::vector<Dim>& dims, int64_t axis) {
  std::vector<Dim> r;
  for (size_t i = 1; i < dims.size(); ++i)
    if (static_cast<int64_t>(i) != axis) r.push_back(dims[i]);
  return r;
}

// "[N, d1, ...]" for per-sample dims or a per-sample shape.
std::string with_n(const std::string& per_sample) {
  return per_sample == "[]" ? "[N]" : cat("[N, ", per_sample.substr(1));
}

}  // namespace

ClassAxis resolve_class_axis(const ValueInfo& out, const LabelOptions& o) {
  ClassAxis r;
  // Rank: the output's, else (no shape) that of the labels plus N and C, else [N, C].
  if (out.shape) r.rank = static_cast<int64_t>(out.shape->size());
  else if (o.label_shape) r.rank = static_cast<int64_t>(o.label_shape->size()) + 2;
  const std::string what = cat("output '", out.name, "' ", out.shape_string());
  if (r.rank < 2)
    throw Error(cat("cross-entropy needs class scores of rank >= 2 ([N, C, ...]), but ", what,
                    " has rank ", r.rank, " (use --loss mse or l1?)"));
  const std::vector<Dim> dims =
      out.shape ? *out.shape : std::vector<Dim>(static_cast<size_t>(r.rank));
  const int64_t last = r.rank - 1;
  auto name = [&](int64_t a) { return a == last && r.rank > 2 ? cat(a, " (last)") : cat(a); };
  auto want = [&](int64_t a) { return with_n(dims_str(without_axis(dims, a))); };
  auto labels_str = [&] { return with_n(shape_str(*o.label_shape)); };
  // Targets of the output's own per-sample shape are not class labels: a regression (a denoiser,
  // a depth map) or a mask.
  auto target_hint = [&]() -> std::string {
    if (!o.label_shape || !out.shape) return "";
    const std::vector<Dim> per_sample(dims.begin() + 1, dims.end());
    return labels_fit(per_sample, *o.label_shape)
               ? "; targets of the output's own shape are a regression or a mask: --loss mse, l1 "
                 "or bce-with-logits"
               : "";
  };
  if (o.class_axis) {
    const int64_t a = *o.class_axis < 0 ? *o.class_axis + r.rank : *o.class_axis;
    if (a < 1 || a >= r.rank)
      throw Error(cat("--class-axis ", *o.class_axis, " is not a class axis of ", what,
                      ": it must be in [1, ", r.rank - 1, "] or [", -(r.rank - 1),
                      ", -1] (axis 0 is the batch)"));
    r.axis = a;
    if (o.label_shape && !labels_fit(without_axis(dims, a), *o.label_shape))
      throw Error(cat("labels of shape ", labels_str(), " do not fit ", what,
                      " with class axis ", a, ": cross-entropy needs labels ", want(a),
                      target_hint()));
    r.why = cat("class axis ", name(a), " of ", what, " (--class-axis ", *o.class_axis, ")");
    return r;
  }
  if (r.rank == 2) {
    r.axis = 1;
    if (o.label_shape && !o.label_shape->empty())
      throw Error(cat("labels of shape ", labels_str(), " do not fit ", what,
                      ": class logits [N, C] need labels [N]", target_hint()));
    r.why = cat("class axis 1 of ", what);
    return r;
  }
  const int64_t by_rank = r.rank == 3 ? last : 1;
  const char* rank_rule = r.rank == 3 ? "rank 3: classes last, as sequence logits [N, T, V]"
                                      : "rank >= 4: classes at axis 1, as [N, C, H, W]";
  if (o.label_shape) {
    const bool fit1 = labels_fit(without_axis(dims, 1), *o.label_shape);
    const bool fit_last = labels_fit(without_axis(dims, last), *o.label_shape);
    if (!fit1 && !fit_last)
      throw Error(cat("labels of shape ", labels_str(), " do not fit ", what,
                      ": cross-entropy needs labels ", want(1), " (classes at axis 1) or ",
                      want(last), " (classes last); --class-axis picks another axis",
                      target_hint()));
    if (fit1 != fit_last) {
      r.axis = fit1 ? 1 : last;
      r.why = cat("class axis ", name(r.axis), " of ", what, " (the labels ", labels_str(),
                  " are its shape without that axis)");
      return r;
    }
    r.axis = by_rank;
    r.why = cat("class axis ", name(r.axis), " of ", what, " (the labels ", labels_str(),
                " fit axis 1 and the last; ", rank_rule, "; --class-axis overrides)");
    return r;
  }
  r.axis = by_rank;
  r.why = cat("class axis ", name(r.axis), " of ", what, " (", rank_rule,
              "; --class-axis overrides)");
  return r;
}

const ValueInfo& data_input_of(const Graph& model) {
  for (const auto& v : model.inputs)
    if (is_floating(v.dtype) && !model.initializers.count(v.name)) return v;
  for (const auto& v : model.inputs)
    if ((v.dtype == DType::I64 || v.dtype == DType::I32) && !model.initializers.count(v.name))
      return v;
  throw Error("the model has no float or integer (token id) input to train on");
}

int64_t index_bound(const Graph& g, const std::string& input) {
  int64_t bound = 0;
  std::vector<std::string> todo = {input};
  std::set<std::string> seen;
  while (!todo.empty()) {
    const std::string v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    for (const Node& n : g.nodes) {
      if (!n.domain.empty()) continue;
      if (n.op == OpId::Gather && n.inputs.size() >= 2 && n.inputs[1] == v) {
        std::optional<Shape> table;
        if (auto it = g.initializers.find(n.inputs[0]); it != g.initializers.end()) {
          table = it->second.shape();
        } else if (auto vi = g.value_info.find(n.inputs[0]);
                   vi != g.value_info.end() && vi->second.shape) {
          Shape s;
          for (const Dim& d : *vi->second.shape) s.push_back(d.value);
          table = s;
        }
        if (!table || table->empty()) continue;
        int64_t axis = n.attr_int("axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(table->size());
        if (axis < 0 || axis >= static_cast<int64_t>(table->size())) continue;
        const int64_t rows = (*table)[static_cast<size_t>(axis)];
        if (rows > 0) bound = bound == 0 ? rows : std::min(bound, rows);
      } else if (!n.inputs.empty() && n.inputs[0] == v && !n.outputs.empty() &&
                 (n.op == OpId::Identity || n.op == OpId::Reshape || n.op == OpId::Squeeze ||
                  n.op == OpId::Unsqueeze || n.op == OpId::Flatten ||
                  (n.op == OpId::Cast &&
                   (n.attr_int("to", 0) == 7 || n.attr_int("to", 0) == 6)))) {  // int64, int32
        todo.push_back(n.outputs[0]);
      }
    }
  }
  return bound;
}

namespace {

Attribute int_attr(int64_t v) { return GradientContext::attr_int(v); }
Attribute float_attr(double v) { return GradientContext::attr_float(static_cast<float>(v)); }

class Emitter {
 public:
  // Every name the model already uses (inputs, initializers, node outputs and inputs) is taken:
  // fresh() never hands one out, so the trainer's own inputs (lr, step, labels, ...) cannot
  // shadow a model value of the same name (a model initializer "step" read as Adam's step count).
  explicit Emitter(Graph& g) : g_(g) {
    for (const auto& v : g.inputs) taken_.insert(v.name);
    for (const auto& v : g.outputs) taken_.insert(v.name);
    for (const auto& [name, t] : g.initializers) taken_.insert(name);
    for (const Node& n : g.nodes) {
      taken_.insert(n.inputs.begin(), n.inputs.end());
      taken_.insert(n.outputs.begin(), n.outputs.end());
    }
  }
  // `base`, or base_1, base_2, ... when the model uses it.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name); ++k) name = cat(base, "_", k);
    taken_.insert(name);
    return name;
  }
  std::string node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                   std::vector<std::string> outputs, std::map<std::string, Attribute> attrs = {},
                   const std::string& domain = "") {
    Node n;
    n.name = name;
    n.op_type = op;
    n.op = op_from_name(op);
    n.domain = domain;
    n.opset = domain.empty() ? 17 : 1;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    g_.nodes.push_back(n);
    emitted_.push_back(name);
    return g_.nodes.back().outputs.empty() ? "" : g_.nodes.back().outputs[0];
  }
  // Names of the nodes emitted so far (the loss, loss scaling, clipping, optimizer nodes).
  const std::vector<std::string>& emitted() const { return emitted_; }
  void input(const std::string& name, DType dt, std::optional<std::vector<Dim>> shape) {
    ValueInfo v;
    v.name = name;
    v.dtype = dt;
    v.shape = std::move(shape);
    g_.inputs.push_back(v);
  }

 private:
  Graph& g_;
  std::vector<std::string> emitted_;
  std::set<std::string> taken_;
};

// Switches BatchNormalization to training mode (opset-15 form: Y, running_mean, running_var)
// and Dropout to training mode (opset-13 form with a mask). Returns BN state updates. A
// BatchNormalization whose mean or var input is computed rather than an initializer is not a
// layer with running statistics but a normalisation by given statistics (tf2onnx's form of
// Keras' LayerNormalization: mean/var are ReduceMeans of the input): it stays as it is, and the
// gradient flows through its mean and var inputs too (train/autodiff/grads/norm.cc).
void to_training_mode(Graph& g, TrainingGraph& tg, bool freeze_batch_norm,
                      std::set<std::string>& fixed_stats) {
  for (Node& n : g.nodes) {
    if (!n.domain.empty()) continue;
    if (n.op == OpId::BatchNormalization) {
      if (n.inputs.size() < 5)
        throw Error(cat(n.describe(), ": BatchNormalization needs its 5 inputs to train"));
      if (!g.initializers.count(n.inputs[3]) || !g.initializers.count(n.inputs[4])) continue;
      if (freeze_batch_norm) {
        // Inference mode (opset-15 form, Y only): Y = γ·(X − mean)/√(var + ε) + β with the
        // running statistics as constants.
        const float eps = n.attr_float("epsilon", 1e-5f);
        n.attrs.clear();
        n.attrs["epsilon"] = float_attr(eps);
        n.attrs["training_mode"] = int_attr(0);
        n.opset = 15;
        n.outputs.resize(1);
        fixed_stats.insert(n.inputs[3]);
        fixed_stats.insert(n.inputs[4]);
        continue;
      }
      const float eps = n.attr_float("epsilon", 1e-5f);
      const float momentum = n.attr_float("momentum", 0.9f);
      n.attrs.clear();
      n.attrs["epsilon"] = float_attr(eps);
      n.attrs["momentum"] = float_attr(momentum);
      n.attrs["training_mode"] = int_attr(1);
      n.opset = 15;
      const std::string& mean = n.inputs[3];
      const std::string& var = n.inputs[4];
      n.outputs.resize(1);
      n.outputs.push_back(n.name + ".running_mean.next");
      n.outputs.push_back(n.name + ".running_var.next");
      for (const auto& [stat, next] : {std::pair{mean, n.outputs[1]}, std::pair{var, n.outputs[2]}}) {
        if (!g.initializers.count(stat))
          throw Error(cat(n.describe(), ": running statistic '", stat, "' is not an initializer"));
        tg.bn_stats.push_back(stat);
        tg.updates[stat] = next;
      }
    } else if (n.op == OpId::Dropout) {
      double ratio = n.attr_float("ratio", 0.5f);
      std::string ratio_in = n.inputs.size() > 1 ? n.inputs[1] : "";
      const std::string ratio_name = n.name + ".ratio";
      const std::string mode_name = n.name + ".training_mode";
      if (ratio_in.empty() || n.opset < 12) {
        g.initializers[ratio_name] = Tensor::scalar<float>(static_cast<float>(ratio));
        ratio_in = ratio_name;
      }
      g.initializers[mode_name] = Tensor::scalar<bool>(true);
      n.attrs.erase("ratio");
      n.attrs.erase("is_test");
      n.opset = 13;
      n.inputs = {n.inputs[0], ratio_in, mode_name};
      n.outputs.resize(1);
      n.outputs.push_back(n.name + ".mask");
    }
  }
}

// DESIGN.md "Weight gradients land in FP32" (issue #5): a low-precision MatMulGrad / GemmGrad /
// ConvGrad / ConvTransposeGrad whose weight or bias gradient goes to an FP32 master — it is the
// parameter's gradient, or one contribution to the FP32 Sum that accumulates it — gets
// grad_type = FLOAT (runtime/grad_type.h). Its dW/dB are then written in FP32 straight from the
// FP32 accumulator; output_stays_fp32 sees them as FP32 slots, so apply_plan types them FP32 and
// inserts no Cast(f16 -> f32) between them and the Sum / UnscaleAndCheck / optimizer.
void weight_grads_to_fp32(Graph& g, const convert::PrecisionPlan& plan,
                          const std::set<std::string>& grad_values) {
  std::set<std::string> to_master = grad_values;
  for (const Node& n : g.nodes)
    if (n.op == OpId::Sum && n.outputs.size() == 1 && grad_values.count(n.outputs[0]))
      to_master.insert(n.inputs.begin(), n.inputs.end());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (!has_weight_grad_outputs(n) || plan.nodes[i].dtype == DType::F32) continue;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (is_weight_grad_output(n, k) && to_master.count(n.outputs[k])) {
        set_weight_grads_fp32(n);
        break;
      }
  }
}

// Paints the whole training graph and inserts the Casts (DESIGN.md "Mixed precision").
void apply_mixed_precision(TrainingGraph& tg, const TrainingGraphOptions& options,
                           const BackwardResult& bw, const std::vector<std::string>& fp32_pins) {
  Graph& g = tg.graph;
  convert::PaintOptions po;
  po.low = options.precision;
  if (!options.op_lists.empty()) po.lists.apply_json_file(options.op_lists);
  po.fp32_nodes.insert(options.fp32_nodes.begin(), options.fp32_nodes.end());
  po.low_nodes.insert(options.low_nodes.begin(), options.low_nodes.end());
  po.out_of_range_fp32 = options.out_of_range_fp32;
  // Ours: the loss, loss scaling, clipping and the optimizer (every node the Emitter wrote), and
  // the Sum that accumulates a parameter's gradient contributions (weight gradients accumulate
  // in FP32). Their gradient nodes follow them, so the seed's path is FP32 too.
  std::set<std::string> grad_values;
  for (const auto& [p, gv] : tg.grads) grad_values.insert(gv);
  for (const auto& name : fp32_pins) po.fp32_nodes.insert(name);
  for (const Node& n : g.nodes)
    if (n.op == OpId::Sum && n.outputs.size() == 1 && grad_values.count(n.outputs[0]))
      po.fp32_nodes.insert(n.name);
  po.follow = bw.origin;
  for (const auto& [part, c] : tg.composite_parts) po.part_of[part] = {c.op_type, c.name};
  tg.plan = convert::paint(g, po);
  weight_grads_to_fp32(g, tg.plan, grad_values);

  convert::ApplyOptions ao;
  ao.keep_io_types = true;             // the trainer feeds FP32 batches and reads an FP32 loss
  ao.convert_initializers = false;     // FP32 masters; Cast nodes make the working copies
  for (const auto& [state, next] : tg.updates) ao.keep_fp32_values.insert(state);
  for (const auto& [state, next] : tg.updates) ao.keep_fp32_values.insert(next);
  convert::apply_plan(g, tg.plan, ao);
}

// Mixed precision with working copies: each trainable parameter's Cast to the low precision
// (apply_plan's "<p>_to_fp16", one per parameter) is removed and its output becomes a state that
// the parameter's optimizer update writes as its working-copy output (runtime/working_type.h):
// round(P') in the step that computes P', instead of a Cast of every master in the next step's
// forward. The numbers are the same; the initial copy is round(P₀).
void keep_working_copies(TrainingGraph& tg, DType low) {
  Graph& g = tg.graph;
  const int64_t code = working_type_code(low);
  const std::set<std::string> params(tg.params.begin(), tg.params.end());
  std::map<std::string, std::string> copy_of;  // parameter -> its working copy
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    if (n.op == OpId::Cast && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        params.count(n.inputs[0]) && n.attr_int("to", 0) == code && !copy_of.count(n.inputs[0])) {
      copy_of[n.inputs[0]] = n.outputs[0];
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  for (Node& n : g.nodes) {
    if ((n.op != OpId::SGDUpdate && n.op != OpId::AdamUpdate) || n.inputs.empty()) continue;
    auto it = copy_of.find(n.inputs[0]);
    if (it == copy_of.end()) continue;
    const std::string& p = it->first;
    const std::string& copy = it->second;
    const size_t out = n.op == OpId::SGDUpdate ? kSgdWorkingOutput : kAdamWorkingOutput;
    n.outputs.resize(out + 1);  // SGD without momentum has no V': output 1 stays ""
    n.outputs[out] = copy + ".next";
    n.attrs[kWorkingTypeAttr] = int_attr(code);
    g.initializers[copy] = cast_tensor(g.initializers.at(p), low);
    ValueInfo vi = g.value_info.count(copy) ? g.value_info.at(copy) : ValueInfo{};
    vi.name = copy + ".next";
    vi.dtype = low;
    g.value_info[vi.name] = vi;
    tg.updates[copy] = copy + ".next";
    tg.working[copy] = p;
    copy_of.erase(it);
  }
  // Every parameter has an update, so every removed Cast found its writer.
  if (!copy_of.empty())
    throw Error(cat("internal: no optimizer update for parameter '", copy_of.begin()->first, "'"));
}

// Every parameter's SGDUpdate / AdamUpdate (one optimizer: same op, attributes and lr, step and
// skip inputs) becomes one group of a MultiSGDUpdate / MultiAdamUpdate (runtime/multi_update.h)
// at the place of the last of them, so everything each read is computed before it. W, the
// working copy a group's W' replaces, comes from TrainingGraph::working.
void merge_updates(TrainingGraph& tg) {
  Graph& g = tg.graph;
  std::vector<size_t> at;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == OpId::SGDUpdate || g.nodes[i].op == OpId::AdamUpdate) at.push_back(i);
  if (at.empty()) return;
  std::map<std::string, std::string> copy_of;  // master -> its working copy
  for (const auto& [copy, master] : tg.working) copy_of[master] = copy;
  const Node& first = g.nodes[at[0]];
  Node multi;
  multi.op = first.op == OpId::SGDUpdate ? OpId::MultiSGDUpdate : OpId::MultiAdamUpdate;
  multi.op_type = op_name(multi.op);
  multi.domain = first.domain;
  multi.opset = first.opset;
  multi.name = first.op == OpId::SGDUpdate ? "optimizer.sgd" : "optimizer.adam";
  const MultiUpdateLayout l = multi_update_layout(multi.op);
  const size_t scalars_at = static_cast<size_t>(l.working_in);  // lr in the single node
  std::vector<std::string> scalars(first.inputs.begin() + static_cast<long>(scalars_at),
                                   first.inputs.end());
  scalars.resize(static_cast<size_t>(l.scalars));  // skip "" when steps are not checked
  // The optimizer's attributes (floats and ints), working_type aside: they must agree.
  auto attrs_without_working = [](const std::map<std::string, Attribute>& a) {
    std::map<std::string, std::pair<float, int64_t>> r;
    for (const auto& [k, v] : a)
      if (k != kWorkingTypeAttr) r[k] = {v.f, v.i};
    return r;
  };
  for (size_t i : at) {
    const Node& n = g.nodes[i];
    std::vector<std::string> own(n.inputs.begin() + static_cast<long>(scalars_at), n.inputs.end());
    own.resize(static_cast<size_t>(l.scalars));
    if (n.op != first.op || own != scalars ||
        attrs_without_working(n.attrs) != attrs_without_working(first.attrs))
      throw Error(cat("internal: ", n.describe(), " and ", first.describe(),
                      " are updates of different optimizers"));
    for (const auto& [k, a] : n.attrs) multi.attrs[k] = a;
    std::vector<std::string> group(n.inputs.begin(), n.inputs.begin() + static_cast<long>(scalars_at));
    auto w = copy_of.find(n.inputs[0]);
    group.push_back(w != copy_of.end() ? w->second : "");
    multi.inputs.insert(multi.inputs.end(), group.begin(), group.end());
    std::vector<std::string> outs = n.outputs;
    outs.resize(static_cast<size_t>(l.out_group));
    multi.outputs.insert(multi.outputs.end(), outs.begin(), outs.end());
  }
  multi.inputs.insert(multi.inputs.end(), scalars.begin(), scalars.end());
  // The precision plan (one entry per node, in graph order) follows: the singles' FP32 entries
  // become the multi node's.
  if (!tg.plan.nodes.empty()) {
    std::set<std::string> singles;
    for (size_t i : at) singles.insert(g.nodes[i].name);
    std::vector<convert::NodePrecision> entries;
    size_t seen = 0;
    for (convert::NodePrecision& np : tg.plan.nodes) {
      if (!singles.count(np.node)) {
        entries.push_back(std::move(np));
        continue;
      }
      if (++seen < singles.size()) continue;
      convert::NodePrecision m;
      m.node = multi.name;
      m.op_type = multi.op_type;
      m.dtype = DType::F32;
      m.reason = cat("optimizer: every parameter's ", op_name(first.op), " (", at.size(),
                     ") in one node");
      entries.push_back(std::move(m));
    }
    tg.plan.nodes = std::move(entries);
  }
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() - at.size() + 1);
  for (size_t i = 0, k = 0; i < g.nodes.size(); ++i) {
    if (k < at.size() && at[k] == i) {
      if (++k == at.size()) nodes.push_back(multi);
      continue;
    }
    nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
}

}  // namespace

void refresh_working_copies(const TrainingGraph& tg, std::map<std::string, Tensor>& state) {
  for (const auto& [copy, master] : tg.working) {
    const DType low = tg.graph.initializers.at(copy).dtype();
    state[copy] = cast_tensor(state.at(master), low);
  }
}

namespace {

// The line a run prints when the loss reads z = logits_behind(...) instead of `output`.
std::string probability_note(const std::string& output, const std::string& z, LossKind loss) {
  const bool ce = loss == LossKind::CrossEntropy;
  return cat("output '", output, "' is ", ce ? "Softmax" : "Sigmoid", "('", z, "'): the loss reads '",
             z, "' as logits (the probabilities' ", ce ? "" : "binary ",
             "cross-entropy, computed stably)");
}

}  // namespace

std::string logits_behind(const Graph& model, const std::string& output, LossKind loss,
                          const ClassAxis& class_axis) {
  auto producer_of = [&](const std::string& v) -> const Node* {
    for (const auto& n : model.nodes)
      if (n.domain.empty() && std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end())
        return &n;
    return nullptr;
  };
  const Node* producer = producer_of(output);
  // Through Identity nodes (exporters put one before a renamed graph output).
  for (int hops = 0; producer && producer->op_type == "Identity" && !producer->inputs.empty() &&
                     hops < 16;
       ++hops)
    producer = producer_of(producer->inputs[0]);
  if (!producer || producer->inputs.empty() || producer->inputs[0].empty()) return "";
  if (loss == LossKind::BCEWithLogits)
    return producer->op_type == "Sigmoid" ? producer->inputs[0] : "";
  if (loss != LossKind::CrossEntropy || producer->op_type != "Softmax") return "";
  auto it = model.opsets.find("");
  const int64_t opset = it == model.opsets.end() ? 1 : it->second;
  const int64_t rank = class_axis.rank;
  int64_t axis = producer->attr_int("axis", opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  const bool over_classes = opset >= 13 ? axis == class_axis.axis
                                        : axis == rank - 1 && class_axis.axis == rank - 1;
  return over_classes ? producer->inputs[0] : "";
}

namespace {

// TrainingGraph::notes: what a user should know about how the export was read.
void model_notes(const Graph& model, const std::vector<std::string>& untied, TrainingGraph& tg) {
  std::set<std::string> outputs;  // Identity aliases are node outputs of the model; reads are not
  bool conv = false, norm = false;  // norm: a normalisation op (BatchNorm was not the design)
  for (const Node& n : model.nodes) {
    outputs.insert(n.outputs.begin(), n.outputs.end());
    conv |= n.op_type == "Conv";
    norm |= n.op_type == "BatchNormalization" || n.op_type == "LayerNormalization" ||
            n.op_type == "InstanceNormalization" || n.op_type == "GroupNormalization";
  }
  size_t aliases = 0, reads = 0;
  for (const auto& u : untied) (outputs.count(u) ? aliases : reads) += 1;
  if (aliases)
    tg.notes.push_back(cat("untied ", aliases, " Identity alias", aliases == 1 ? "" : "es",
                           " of initializers into parameters of their own (torch.onnx merges "
                           "parameters with equal values)"));
  if (reads)
    tg.notes.push_back(cat("untied ", reads, " read", reads == 1 ? "" : "s",
                           " of merged initializers (equal-valued tensors ",
                           model.producer.empty() ? "the exporter" : model.producer,
                           " wrote once, or BatchNorm running statistics read elsewhere) into "
                           "initializers of their own"));
  if (!tg.constants.empty())
    tg.notes.push_back(cat("kept ", tg.constants.size(), " one-element initializer",
                           tg.constants.size() == 1 ? "" : "s", " constant (", model.producer,
                           " writes constants such as '", tg.constants.front(),
                           "' as initializers; Keras variables are named .../ReadVariableOp:0)"));
  if (conv && !norm && (model.producer == "pytorch" || model.producer == "tf2onnx"))
    tg.notes.push_back(
        "note: the model has Conv but no BatchNormalization. Exporters fold BatchNorm into the "
        "Conv before it for inference (tf2onnx always, torch.onnx in eval mode), which leaves a "
        "network that trains without normalisation. If it had BatchNorm, re-export keeping it: "
        "torch.onnx.export(..., training=torch.onnx.TrainingMode.PRESERVE), or "
        "tf2onnx.convert.from_keras(..., optimizers={k: v for k, v in "
        "tf2onnx.optimizer._optimizers.items() if k != 'remove_back_to_back'})");
}

}  // namespace

TrainingGraph build_training_graph(const Graph& model, const TrainingGraphOptions& options) {
  if (options.precision != DType::F32 && options.precision != DType::F16 &&
      options.precision != DType::BF16)
    throw Error(cat("training precision must be fp32, fp16 or bf16, got ",
                    dtype_name(options.precision)));
  TrainingGraph tg;
  std::vector<std::string> untied;  // torch's merged equal-valued parameters, apart again
  tg.graph = untie_initializer_aliases(model, &untied);
  Graph& g = tg.graph;
  g.name = model.name + "_training";
  fold_transpose_pairs(g);  // tf2onnx's NHWC round trips (runtime/transpose_fold.h)
  lower_composites(g, &tg.composite_parts);  // Einsum, RNN/GRU/LSTM: autodiff sees their parts
  if (!g.opsets.count("") || g.opsets[""] < 17) g.opsets[""] = 17;
  g.opsets[kInternalDomain] = 1;

  tg.data_input = data_input_of(model).name;
  if (model.outputs.empty()) throw Error("the model has no outputs");
  const ValueInfo* out = &model.outputs[0];
  if (!options.output.empty()) {
    out = nullptr;
    for (const auto& v : model.outputs)
      if (v.name == options.output) out = &v;
    if (!out) throw Error(cat("the model has no output named '", options.output, "'"));
  }
  tg.output = out->name;
  tg.scores = tg.output;
  // Cross-entropy / BCE on a final Softmax / Sigmoid read the logits behind it (logits_behind).
  auto read_logits_behind_output = [&] {
    const std::string z = logits_behind(model, tg.output, options.loss, tg.class_axis);
    if (z.empty()) return;
    tg.scores = z;
    tg.scores_why = probability_note(tg.output, z, options.loss);
  };
  std::set<std::string> fixed_stats;  // --freeze-batchnorm: running statistics kept as they are
  to_training_mode(g, tg, options.freeze_batch_norm, fixed_stats);

  Emitter e(g);
  Dim batch;
  batch.param = "batch";
  switch (options.loss) {
    case LossKind::CrossEntropy: {
      // PyTorch's nn.CrossEntropyLoss: mean over the positions whose label is not ignore_index of
      // −log softmax(scores)[label], the softmax along the class axis. SoftmaxCrossEntropyLoss
      // takes classes at axis 1, so a class axis a ≠ 1 is moved there first:
      //   Transpose(perm = [0, a, 1, .., a−1, a+1, ..]) : [N, d1, .., C, ..] -> [N, C, d1, ..]
      // whose shape without axis 1 is the output's without axis a: the labels' shape.
      tg.class_axis = resolve_class_axis(*out, options.labels);
      const int64_t a = tg.class_axis.axis, rank = tg.class_axis.rank;
      tg.target = e.fresh("labels");
      std::vector<Dim> label_dims{batch};
      for (int64_t d = 1; d < rank; ++d)
        if (d != a) label_dims.push_back(out->shape ? (*out->shape)[static_cast<size_t>(d)] : Dim{});
      e.input(tg.target, DType::I64, label_dims);
      read_logits_behind_output();
      std::string scores = tg.scores;
      if (a != 1) {
        std::vector<int64_t> perm = {0, a};
        for (int64_t d = 1; d < rank; ++d)
          if (d != a) perm.push_back(d);
        scores = e.node("Transpose", "loss.classes_to_axis1", {tg.scores}, {"loss.scores"},
                        {{"perm", ints_attribute(perm)}});
      }
      tg.loss = e.node("SoftmaxCrossEntropyLoss", "loss", {scores, tg.target},
                       {e.fresh("loss"), e.fresh("loss.log_prob")},
                       {{"reduction", string_attribute("mean")},
                        {"ignore_index", int_attr(options.labels.ignore_index)}});
      break;
    }
    case LossKind::MSE:
    case LossKind::L1: {
      // MSE: mean((y − t)²);  L1: mean(|y − t|)
      tg.target = e.fresh("targets");
      e.input(tg.target, out->dtype, out->shape);
      std::string d = e.node("Sub", "loss.diff", {tg.output, tg.target}, {"loss.diff"});
      std::string r = options.loss == LossKind::MSE
                          ? e.node("Mul", "loss.sq", {d, d}, {"loss.sq"})
                          : e.node("Abs", "loss.abs", {d}, {"loss.abs"});
      tg.loss = e.node("ReduceMean", "loss", {r}, {e.fresh("loss")}, {{"keepdims", int_attr(0)}});
      break;
    }
    case LossKind::BCEWithLogits: {
      // mean(max(x, 0) − x·t + log(1 + e^(−|x|))), the stable form PyTorch uses.
      tg.target = e.fresh("targets");
      e.input(tg.target, out->dtype, out->shape);
      read_logits_behind_output();
      const std::string& x = tg.scores;
      std::string relu = e.node("Relu", "loss.relu", {x}, {"loss.relu"});
      std::string xt = e.node("Mul", "loss.xt", {x, tg.target}, {"loss.xt"});
      std::string nabs = e.node("Neg", "loss.nabs", {e.node("Abs", "loss.abs", {x}, {"loss.abs"})},
                                {"loss.nabs"});
      std::string sp = e.node("Softplus", "loss.softplus", {nabs}, {"loss.softplus"});
      std::string t = e.node("Add", "loss.sum", {e.node("Sub", "loss.sub", {relu, xt}, {"loss.sub"}), sp},
                             {"loss.elem"});
      tg.loss = e.node("ReduceMean", "loss", {t}, {e.fresh("loss")}, {{"keepdims", int_attr(0)}});
      break;
    }
    case LossKind::Model:
      if (out->shape && !out->shape->empty() &&
          !(out->shape->size() == 1 && (*out->shape)[0].value == 1))
        throw Error(cat("--loss model needs a scalar output, but '", out->name, "' has shape ",
                        out->shape_string()));
      tg.loss = tg.output;
      break;
  }

  // Parameters: float initializers that are not frozen and not BN statistics; those without a
  // differentiable path to the loss are dropped by the backward pass.
  std::set<std::string> stats(tg.bn_stats.begin(), tg.bn_stats.end());
  std::vector<std::string> candidates;
  std::set<std::string> model_initializers(untied.begin(), untied.end());
  for (const auto& [name, t] : model.initializers) model_initializers.insert(name);
  const bool tf_exporter = model.producer == "tf2onnx" || model.producer == "keras2onnx";
  for (const auto& name : model_initializers) {
    auto it = g.initializers.find(name);
    if (it == g.initializers.end() || !is_floating(it->second.dtype()) || stats.count(name))
      continue;
    if (tf_exporter && it->second.numel() == 1 && name.find("ReadVariableOp") == std::string::npos) {
      tg.constants.push_back(name);
      continue;
    }
    bool frozen = fixed_stats.count(name) ||
                  std::any_of(options.freeze.begin(), options.freeze.end(),
                              [&](const std::string& p) { return wildcard_match(p, name); });
    (frozen ? tg.frozen : candidates).push_back(name);
  }
  if (!g.value_info.count(tg.loss)) {
    ValueInfo lv;
    lv.name = tg.loss;
    lv.dtype = out->dtype == DType::Undefined ? DType::F32 : out->dtype;
    g.value_info[tg.loss] = lv;
  }
  BackwardOptions bo;
  BackwardResult bw = build_backward(g, tg.loss, candidates, bo);
  tg.seed = bw.seed;
  tg.origin = bw.origin;
  for (const auto& p : candidates)
    if (bw.grads.count(p)) {
      tg.params.push_back(p);
      tg.grads[p] = bw.grads.at(p);
    }
  if (tg.params.empty())
    throw NoTrainableParameters("no trainable parameters reach the loss (all frozen?)");
  for (const auto& p : tg.params) {
    const DType t = g.initializers.at(p).dtype();
    if (t == DType::F16 || t == DType::BF16)
      throw Error(cat("parameter '", p, "' is ", dtype_name(t),
                      ": this is a low-precision inference model (as `convert` writes); train the "
                      "float32 model, with --precision fp16 or bf16 for mixed precision (FP32 "
                      "master weights)"));
  }
  model_notes(model, untied, tg);

  tg.lr = e.fresh("lr");
  tg.step = e.fresh("step");
  e.input(tg.lr, DType::F32, std::vector<Dim>{});
  e.input(tg.step, DType::I64, std::vector<Dim>{});

  std::vector<std::string> grads;
  for (const auto& p : tg.params) grads.push_back(tg.grads.at(p));
  std::string skip;  // the optimizer updates' trailing `skip` input
  if (options.loss_scaling) {
    // One pass: every gradient times 1/scale (in FP32), and whether any is Inf/NaN.
    tg.inv_scale = e.fresh("loss_scale.inv");
    tg.found_inf = e.fresh("loss_scale.found_inf");
    e.input(tg.inv_scale, DType::F32, std::vector<Dim>{});
    std::vector<std::string> ins = {tg.inv_scale}, outs;
    ins.insert(ins.end(), grads.begin(), grads.end());
    for (const auto& p : tg.params) outs.push_back(p + ".grad.unscaled");
    outs.push_back(tg.found_inf);
    e.node("UnscaleAndCheck", "loss_scale.unscale", ins, outs, {}, kInternalDomain);
    outs.pop_back();
    grads = outs;
    skip = tg.found_inf;
  }
  if (options.clip_norm > 0) {
    g.initializers["clip.max_norm"] = Tensor::scalar<float>(static_cast<float>(options.clip_norm));
    std::vector<std::string> ins = grads, outs;
    ins.push_back("clip.max_norm");
    for (const auto& p : tg.params) outs.push_back(p + ".grad.clipped");
    outs.push_back("clip.norm");
    e.node("GlobalNormClip", "clip", ins, outs, {}, kInternalDomain);
    outs.pop_back();
    grads = outs;
  }

  const OptimizerConfig& o = options.optimizer;
  auto with_skip = [&](std::vector<std::string> ins) {
    if (!skip.empty()) ins.push_back(skip);
    return ins;
  };
  for (size_t i = 0; i < tg.params.size(); ++i) {
    const std::string& p = tg.params[i];
    const Tensor& pt = g.initializers.at(p);
    auto zeros_like = [&](const std::string& name) {
      g.initializers[name] = Tensor::zeros(pt.dtype(), pt.shape());
      return name;
    };
    if (o.kind == OptimizerKind::SGD) {
      std::map<std::string, Attribute> a = {{"momentum", float_attr(o.momentum)},
                                            {"dampening", float_attr(o.dampening)},
                                            {"nesterov", int_attr(o.nesterov ? 1 : 0)},
                                            {"weight_decay", float_attr(o.weight_decay)}};
      if (o.momentum != 0.0) {
        std::string v = zeros_like(p + ".velocity");
        e.node("SGDUpdate", p + ".sgd", with_skip({p, grads[i], v, tg.lr}),
               {p + ".next", v + ".next"}, a, kInternalDomain);
        tg.updates[v] = v + ".next";
      } else {
        e.node("SGDUpdate", p + ".sgd", with_skip({p, grads[i], "", tg.lr}), {p + ".next"}, a,
               kInternalDomain);
      }
    } else {
      std::string m = zeros_like(p + ".adam_m"), v = zeros_like(p + ".adam_v");
      e.node("AdamUpdate", p + ".adam", with_skip({p, grads[i], m, v, tg.lr, tg.step}),
             {p + ".next", m + ".next", v + ".next"},
             {{"beta1", float_attr(o.beta1)},
              {"beta2", float_attr(o.beta2)},
              {"epsilon", float_attr(o.epsilon)},
              {"weight_decay", float_attr(o.weight_decay)},
              {"decoupled", int_attr(o.kind == OptimizerKind::AdamW ? 1 : 0)}},
             kInternalDomain);
      tg.updates[m] = m + ".next";
      tg.updates[v] = v + ".next";
    }
    tg.updates[p] = p + ".next";
  }

  // The training graph's outputs: the loss, then every state update.
  g.outputs.clear();
  ValueInfo lv;
  lv.name = tg.loss;
  lv.dtype = g.value_info.at(tg.loss).dtype;
  g.outputs.push_back(lv);
  std::vector<std::string> known;
  for (const auto& v : g.inputs) known.push_back(v.name);
  for (const auto& [k, t] : g.initializers) known.push_back(k);
  topological_sort(g.nodes, known);
  if (options.precision != DType::F32) {
    apply_mixed_precision(tg, options, bw, e.emitted());
    if (options.working_copies) keep_working_copies(tg, options.precision);
  }
  if (options.multi_tensor_updates) merge_updates(tg);
  return tg;
}

}  // namespace oat::train
