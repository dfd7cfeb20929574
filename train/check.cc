#include "train/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "convert/export.h"
#include "runtime/cuda/device.h"
#include "runtime/value_numbers.h"

namespace oat::train {

namespace {

// max|a − r| and max|r| over two tensors of one shape, in FP32 (see check.h for the rules on
// non-finite values).
struct Diff {
  double abs = 0.0, max_ref = 0.0;
  int64_t overflow = 0;      // elements a rounded to ±inf because r is beyond a's range
  double overflow_max = 0.0;  // the largest such |r|
  // Elements below the format's smallest normal whose error is at most one subnormal step: left
  // out of `abs` (counted in abs_all).
  int64_t underflow = 0;
  double underflow_max = 0.0;  // the largest such |r|
  double abs_all = 0.0;        // abs with the underflow elements
  double rel() const { return max_ref > 0.0 ? abs / max_ref : abs; }
  double rel_all() const { return max_ref > 0.0 ? abs_all / max_ref : abs_all; }
};

// Underflow: a low-precision value below the smallest normal (FP16 2^-14, BF16 2^-126) is a
// subnormal with fixed spacing 2^-24 (resp. 2^-133), so rounding it loses relative precision
// however right the kernel is. A kernel that computes in FP32 and rounds once stays within half
// that spacing; `subnormal_step` returns the whole spacing (the tolerance for such elements).
struct LowRange {
  double min_normal = 0.0, subnormal_step = 0.0;  // 0: no exemption
};
LowRange low_range(DType t) {
  if (t == DType::F16) return {std::ldexp(1.0, -14), std::ldexp(1.0, -24)};
  if (t == DType::BF16) return {std::ldexp(1.0, -126), std::ldexp(1.0, -133)};
  return {};
}

// The largest finite value of a low-precision float type; infinity for the others.
double max_finite(DType t) {
  if (t == DType::F16) return 65504.0;
  if (t == DType::BF16) return 3.3895313892515355e38;
  return INFINITY;
}

// `range` (a's max_finite): an element where a is ±inf and r is finite, of the same sign and at
// least `range` in magnitude, is an overflow (counted, not an error of the rounding); every
// other difference counts in abs.
// `low`: elements where |r| is below low.min_normal and |a − r| <= low.subnormal_step are an
// underflow (counted, left out of abs).
Diff diff(const Tensor& a, const Tensor& r, double range = INFINITY, LowRange low = {}) {
  Diff d;
  if (a.shape() != r.shape()) {
    d.abs = INFINITY;
    return d;
  }
  const Tensor af = cast_tensor(a, DType::F32), rf = cast_tensor(r, DType::F32);
  const float* x = af.data<float>();
  const float* y = rf.data<float>();
  for (int64_t i = 0; i < af.numel(); ++i) {
    if (std::isfinite(y[i])) d.max_ref = std::max(d.max_ref, std::fabs(static_cast<double>(y[i])));
    if (x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) continue;
    if (std::isinf(x[i]) && std::isfinite(y[i]) && std::fabs(y[i]) >= range &&
        std::signbit(x[i]) == std::signbit(y[i])) {
      ++d.overflow;
      d.overflow_max = std::max(d.overflow_max, std::fabs(static_cast<double>(y[i])));
      continue;
    }
    const double e = std::fabs(static_cast<double>(x[i]) - y[i]);
    d.abs_all = std::max(d.abs_all, std::isfinite(e) ? e : INFINITY);
    if (std::fabs(static_cast<double>(y[i])) < low.min_normal && e <= low.subnormal_step) {
      ++d.underflow;
      d.underflow_max = std::max(d.underflow_max, std::fabs(static_cast<double>(y[i])));
      continue;
    }
    d.abs = std::max(d.abs, std::isfinite(e) ? e : INFINITY);
  }
  return d;
}

// One run of a training graph: every node output, observed as it is computed.
struct PathRun {
  std::map<std::string, Tensor> values;
  double loss = 0.0;
};

PathRun run_path(const TrainingGraph& tg, Device device, const std::map<std::string, Tensor>& feeds,
                 const std::function<void(const Node&, std::vector<Tensor>&)>& perturb) {
  ExecutorOptions eo;
  eo.device = device;
  Executor exec(tg.graph, eo);
  PathRun r;
  exec.set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    std::vector<Tensor> seen = outs;  // shallow: an in-place change reaches the executor's values
    if (perturb) perturb(n, seen);
    for (size_t i = 0; i < n.outputs.size() && i < seen.size(); ++i)
      if (!n.outputs[i].empty() && seen[i].defined()) r.values[n.outputs[i]] = seen[i];
  });
  if (tg.loss.empty()) {  // forward only: the graph's outputs
    exec.run(feeds);
    return r;
  }
  auto out = exec.run(feeds, {tg.loss});
  r.loss = out.at(tg.loss).item_as_double();
  return r;
}

// The feeds of one forward + backward pass: the batch, lr 0, step 1, the backward seed S.
std::map<std::string, Tensor> feeds_for(const TrainingGraph& tg, const Tensor& input,
                                        const Tensor& target, double scale,
                                        const std::map<std::string, Tensor>& extra) {
  std::map<std::string, Tensor> f = extra;  // the model's other inputs
  f[tg.data_input] = input;
  if (!tg.target.empty()) f[tg.target] = target;
  f[tg.lr] = Tensor::scalar<float>(0.0f);
  f[tg.step] = Tensor::scalar<int64_t>(1);
  DType seed_type = DType::F32;
  for (const auto& v : tg.graph.inputs)
    if (v.name == tg.seed && v.dtype != DType::Undefined) seed_type = v.dtype;
  f[tg.seed] = cast_tensor(Tensor::scalar<double>(scale), seed_type);
  return f;
}

bool all_finite(const Tensor& t) {
  if (!t.is_tensor() || !is_floating(t.dtype())) return true;
  const Tensor f = cast_tensor(t, DType::F32);
  const float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

bool is_optimizer(const Node& n) {
  return n.op_type == "SGDUpdate" || n.op_type == "AdamUpdate" || n.op_type == "MultiSGDUpdate" ||
         n.op_type == "MultiAdamUpdate" || n.op_type == "UnscaleAndCheck" ||
         n.op_type == "GlobalNormClip";
}

// The node's FP32 CPU kernel on the checked path's inputs of it, cast to FP32: its outputs.
// `absolute`: every float input replaced by |input| (see sum_like below).
std::vector<Tensor> local_reference(const Node& node, const Graph& g,
                                    const std::map<std::string, Tensor>& values,
                                    const std::map<std::string, Tensor>& feeds,
                                    bool absolute = false) {
  Graph one;
  one.opsets = g.opsets;
  std::map<std::string, Tensor> f;
  for (const auto& in : node.inputs) {
    if (in.empty() || f.count(in)) continue;
    const Tensor* t = nullptr;
    if (auto it = values.find(in); it != values.end()) t = &it->second;
    else if (auto it2 = feeds.find(in); it2 != feeds.end()) t = &it2->second;
    else if (auto it3 = g.initializers.find(in); it3 != g.initializers.end()) t = &it3->second;
    if (!t) throw Error(cat(node.describe(), ": check has no value for input '", in, "'"));
    f[in] = t->is_tensor() && is_low_float(t->dtype()) ? cast_tensor(*t, DType::F32) : *t;
    if (absolute && f[in].is_tensor() && is_floating(f[in].dtype())) {
      Tensor a = cast_tensor(f[in], DType::F32).clone();  // values share storage: never in place
      float* p = a.data<float>();
      for (int64_t k = 0; k < a.numel(); ++k) p[k] = std::fabs(p[k]);
      f[in] = a;
    }
    // With its shape: a composite op (LSTM, GridSample: forward-only checks keep them) reads
    // ranks and sizes from value_info when it expands.
    std::vector<Dim> dims;
    for (int64_t d : f[in].shape()) dims.push_back(Dim{d, ""});
    one.inputs.push_back(ValueInfo{in, f[in].dtype(), std::move(dims)});
  }
  one.nodes.push_back(node);
  std::vector<std::string> fetch;
  for (const auto& o : node.outputs)
    if (!o.empty() && values.count(o)) {
      one.outputs.push_back(ValueInfo{o, DType::Undefined, std::nullopt});
      fetch.push_back(o);
    }
  if (fetch.empty()) return {};
  Executor exec(one);
  auto r = exec.run(f, fetch);
  std::vector<Tensor> outs;
  for (const auto& o : node.outputs) outs.push_back(r.count(o) ? r.at(o) : Tensor());
  return outs;
}

// Ops whose outputs are sums of products of their inputs, multilinear in them (dot products,
// convolutions, reductions, scatter-adds). Summed in another order (a GPU's tree reduction against
// the CPU's loop), such a sum differs by up to ~K·u·S, S = Σ|terms| (u = 2^-24 in FP32), which
// is no bound at all relative to the result when the terms cancel: the bias gradient of an
// attention key projection is mathematically zero (softmax is shift invariant), so it is FP32
// noise on both paths, and its rel was ~1 for a right kernel. For these ops the gate is
//   abs <= max(tol · max|r|,  kSumUlps · u · max S)
// (S from the same node run on its inputs' magnitudes), i.e. the local rel is taken relative to
// max(max|r|, kSumUlps·u·S / tol). kSumUlps = 64: the worst-case order error of 64 terms, a
// random order's of ~4000. A wrong kernel (a wrong factor, a wrong index) errs by O(max|r|) or
// more and still fails unless that is below 64·u·S ≈ 3.8e-6·S (terms cancelling that far).
constexpr double kSumUlps = 64.0;

bool sum_like(OpId op) {
  switch (op) {
    case OpId::MatMul: case OpId::Gemm: case OpId::MatMulGrad: case OpId::GemmGrad:
    case OpId::Conv: case OpId::ConvGrad: case OpId::ConvTranspose:
    case OpId::ConvTransposeGrad: case OpId::ReduceSum: case OpId::ReduceMean: case OpId::Sum:
    case OpId::GatherGrad: case OpId::TileGrad: case OpId::CumSum:
    case OpId::AveragePool: case OpId::GlobalAveragePool: case OpId::AveragePoolGrad:
    case OpId::GlobalAveragePoolGrad: case OpId::ResizeGrad: case OpId::SumToShape:
      return true;
    default:
      return false;
  }
}

double max_abs(const Tensor& t) {
  if (!t.defined() || !t.is_tensor() || !is_floating(t.dtype())) return 0.0;
  double m = 0.0;
  const Tensor f = cast_tensor(t, DType::F32);
  const float* p = f.data<float>();
  for (int64_t k = 0; k < f.numel(); ++k)
    if (std::isfinite(p[k])) m = std::max(m, static_cast<double>(std::fabs(p[k])));
  return m;
}

double tolerance(const CheckOptions& o, DType precision) {
  if (precision == DType::F16) return o.tol.fp16;
  if (precision == DType::BF16) return o.tol.bf16;
  return o.device == Device::CUDA ? o.tol.fp32_cuda : o.tol.fp32;
}

const char* precision_name(DType d) {
  return d == DType::F16 ? "fp16" : d == DType::BF16 ? "bf16" : "fp32";
}

void compare_nodes(CheckReport& rep, const TrainingGraph& ref, const TrainingGraph& mix,
                   const PathRun& m, const PathRun& r, const std::map<std::string, Tensor>& mfeeds,
                   double scale, const CheckOptions& o,
                   const std::map<std::string, std::string>& alias = {});

// Forward only (CheckOptions::forward_only): the reference is the model itself, the checked path
// the model as `convert` writes it (convert_for_inference: Constants folded into initializers,
// those read only in low precision stored F16/BF16, Casts inserted, FP32 inputs and outputs); the
// same node-by-node comparison without gradients, plus every graph output end to end.
CheckReport run_forward_check(const Graph& model, const Tensor& input, const CheckOptions& o,
                              CheckReport rep) {
  rep.forward_only = true;
  TrainingGraph ref, mix;
  ref.graph = model;
  if (o.precision == DType::F32) {
    mix.graph = model;
  } else {
    convert::ExportOptions eo;
    eo.paint.low = o.precision;
    if (!o.op_lists.empty()) eo.paint.lists.apply_json_file(o.op_lists);
    eo.paint.fp32_nodes.insert(o.fp32_nodes.begin(), o.fp32_nodes.end());
    eo.paint.low_nodes.insert(o.low_nodes.begin(), o.low_nodes.end());
    eo.paint.out_of_range_fp32 = o.out_of_range_fp32;
    eo.keep_io_types = true;  // both paths take the same FP32 feeds
    convert::ConvertedGraph c = convert::convert_for_inference(model, eo);
    for (const std::string& pin : c.schema_pins)
      rep.notes.push_back(cat("kept fp32 (ONNX schema): ", pin));
    for (const std::string& line : c.report.clamped) rep.notes.push_back(cat("clamped: ", line));
    mix.graph = std::move(c.graph);
    mix.plan = std::move(c.plan);
  }
  std::map<std::string, Tensor> feeds = o.extra_inputs;
  feeds[data_input_of(model).name] = input;
  const PathRun m = run_path(mix, o.device, feeds, o.perturb);
  const PathRun r = run_path(ref, Device::CPU, feeds, nullptr);
  // A low-precision node that wrote a graph output now writes "<y>_fp16", Cast to y: compare
  // that value with the reference's y on the node's own row.
  std::map<std::string, std::string> alias;
  std::set<std::string> outputs;
  for (const ValueInfo& v : model.outputs) outputs.insert(v.name);
  for (const Node& n : mix.graph.nodes)
    if (n.op == OpId::Cast && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        outputs.count(n.outputs[0]))
      alias[n.inputs[0]] = n.outputs[0];
  compare_nodes(rep, ref, mix, m, r, feeds, 1.0, o, alias);
  for (const ValueInfo& out : model.outputs) {
    ValueError e;
    e.value = out.name;
    auto a = m.values.find(out.name);
    auto b = r.values.find(out.name);
    if (a != m.values.end() && b != r.values.end() && is_floating(a->second.dtype()) &&
        is_floating(b->second.dtype())) {
      // (ZipMap's sequence of maps: its maps' values, when both paths have the same keys)
      const Tensor fa = flat_values(a->second), fb = flat_values(b->second);
      if (fa.defined() && fb.defined() && fa.numel() == fb.numel() &&
          same_keys(a->second, b->second)) {
        const Diff d = diff(fa, fb);
        e.add(out.name, d.abs, d.rel());
      }
    }
    rep.outputs.push_back(e);
  }
  return rep;
}

}  // namespace

std::string check_mode_line(const CheckOptions& o, const std::string& why_cpu) {
  const char* p = precision_name(o.precision);
  const std::string fwd = o.forward_only ? ", forward only (the inference model)" : "";
  if (o.device == Device::CUDA)
    return cat("CUDA-vs-CPU: CUDA ", p, " on ", cuda::describe_device(0), " vs CPU FP32 reference",
               fwd);
  return cat("CPU-vs-CPU: CPU ",
             o.precision == DType::F32 ? "fp32" : cat("mixed ", p, " (", p, " CPU kernels)"),
             " vs CPU FP32 reference", why_cpu.empty() ? "" : cat(" (", why_cpu, ")"), fwd);
}

void ValueError::add(const std::string& name, double a, double r) {
  if (!any || r > rel) {
    rel = r;
    value = name;
  }
  abs = std::max(abs, a);
  any = true;
}

std::string forward_only_reason(const Graph& model, const CheckOptions& o) {
  TrainingGraphOptions go;
  go.loss = o.loss;
  go.labels = o.labels;
  go.output = o.output;
  try {
    build_training_graph(model, go);
  } catch (const NoTrainableParameters& e) {
    return e.what();
  } catch (const Error&) {
  }
  return "";
}

CheckReport run_check(const Graph& model, const Tensor& input, const Tensor& target,
                      const CheckOptions& o) {
  if (o.precision != DType::F32 && o.precision != DType::F16 && o.precision != DType::BF16)
    throw Error(cat("check precision must be fp16, bf16 or fp32, got ", dtype_name(o.precision)));
  CheckReport rep;
  rep.precision = o.precision;
  rep.device = o.device;
  if (o.device == Device::CUDA) cuda::require_device();
  rep.mode = check_mode_line(o);
  if (o.forward_only) return run_forward_check(model, input, o, rep);

  TrainingGraphOptions go;
  go.loss = o.loss;
  go.labels = o.labels;
  go.output = o.output;
  go.optimizer.kind = OptimizerKind::SGD;  // lr 0: the update is not part of the check
  const TrainingGraph ref = build_training_graph(model, go);
  go.precision = o.precision;
  go.op_lists = o.op_lists;
  go.fp32_nodes = o.fp32_nodes;
  go.low_nodes = o.low_nodes;
  go.out_of_range_fp32 = o.out_of_range_fp32;
  const TrainingGraph mix = build_training_graph(model, go);
  if (!mix.scores_why.empty()) rep.notes.push_back(mix.scores_why);
  rep.notes.insert(rep.notes.end(), mix.notes.begin(), mix.notes.end());

  // The checked path first: with a dynamic S, halve it while its parameter gradients overflow.
  const bool dynamic = o.loss_scale <= 0.0;
  double scale = dynamic ? (o.precision == DType::F16 ? 65536.0 : 1.0) : o.loss_scale;
  PathRun m;
  std::map<std::string, Tensor> mfeeds;
  for (int attempt = 0;; ++attempt) {
    mfeeds = feeds_for(mix, input, target, scale, o.extra_inputs);
    m = run_path(mix, o.device, mfeeds, o.perturb);
    bool finite = true;
    for (const auto& [param, grad] : mix.grads)
      if (m.values.count(grad) && !all_finite(m.values.at(grad))) finite = false;
    rep.grads_finite = finite;
    if (finite || !dynamic || attempt >= 24 || scale <= 1.0) break;
    scale *= 0.5;
    ++rep.overflow_retries;
  }
  rep.loss_scale = scale;
  const PathRun r =
      run_path(ref, Device::CPU, feeds_for(ref, input, target, scale, o.extra_inputs), nullptr);
  rep.loss_ref = r.loss;
  rep.loss_checked = m.loss;
  compare_nodes(rep, ref, mix, m, r, mfeeds, scale, o);
  return rep;
}

namespace {

void compare_nodes(CheckReport& rep, const TrainingGraph& ref, const TrainingGraph& mix,
                   const PathRun& m, const PathRun& r, const std::map<std::string, Tensor>& mfeeds,
                   double scale, const CheckOptions& o,
                   const std::map<std::string, std::string>& alias) {
  // Groups: a forward node with its gradient nodes; parameter-gradient Sums alone; inserted
  // Casts (no counterpart in the reference graph) with their first consumer.
  std::set<std::string> ref_nodes;
  for (const Node& n : ref.graph.nodes) ref_nodes.insert(n.name);
  std::map<std::string, std::string> group_of;  // checked-graph node -> row key
  std::map<std::string, size_t> row_of;          // row key -> index in rep.nodes
  std::map<std::string, std::string> producer;   // value -> node (checked graph)
  std::map<std::string, std::string> cast_consumer;
  for (const Node& n : mix.graph.nodes)
    for (const auto& in : n.inputs)
      if (!in.empty() && !cast_consumer.count(in)) cast_consumer[in] = n.name;
  for (const Node& n : mix.graph.nodes) {
    if (is_optimizer(n) || !ref_nodes.count(n.name)) continue;
    auto it = mix.origin.find(n.name);
    const std::string key = it != mix.origin.end() ? it->second : n.name;
    group_of[n.name] = key;
    if (!row_of.count(key)) {
      NodeCheck c;
      c.node = key;
      c.op = n.op_type;
      c.grad_only = it == mix.origin.end() &&
                    std::any_of(mix.grads.begin(), mix.grads.end(), [&](const auto& pg) {
                      return !n.outputs.empty() && pg.second == n.outputs[0];
                    });
      const convert::NodePrecision* np = mix.plan.find(key);
      c.precision = np && o.precision != DType::F32 ? np->dtype : DType::F32;
      c.tol = tolerance(o, c.precision);
      row_of[key] = rep.nodes.size();
      rep.nodes.push_back(c);
    }
  }
  // Casts go with the row of their first consumer (following chains of Casts).
  for (auto it = mix.graph.nodes.rbegin(); it != mix.graph.nodes.rend(); ++it) {
    const Node& n = *it;
    if (group_of.count(n.name) || is_optimizer(n) || n.outputs.empty()) continue;
    auto c = cast_consumer.find(n.outputs[0]);
    if (c != cast_consumer.end() && group_of.count(c->second))
      group_of[n.name] = group_of.at(c->second);
  }

  for (const Node& n : mix.graph.nodes) {
    auto g = group_of.find(n.name);
    if (g == group_of.end()) continue;
    NodeCheck& c = rep.nodes[row_of.at(g->second)];
    const bool is_grad = mix.origin.count(n.name) || c.grad_only;
    const bool inserted = !ref_nodes.count(n.name);
    // End-to-end: values that both graphs have.
    if (!inserted)
      for (const auto& v : n.outputs) {
        auto al = alias.find(v);
        const std::string& rv = al != alias.end() && !r.values.count(v) ? al->second : v;
        if (v.empty() || !m.values.count(v) || !r.values.count(rv)) continue;
        const Tensor& a = m.values.at(v);
        const Tensor& b = r.values.at(rv);
        // (sequences and maps, e.g. ZipMap's, are not compared: only their float tensors are)
        if (!a.is_tensor() || !b.is_tensor() || !is_floating(a.dtype()) || !is_floating(b.dtype()))
          continue;
        Diff d = diff(a, b);
        if (is_grad) c.grad.add(v, d.abs / scale, d.rel());
        else c.out.add(v, d.abs, d.rel());
      }
    // Local: this node's FP32 CPU kernel on the checked path's inputs.
    std::vector<Tensor> loc = local_reference(n, mix.graph, m.values, mfeeds);
    std::vector<Tensor> loc_abs;
    if (sum_like(n.op)) loc_abs = local_reference(n, mix.graph, m.values, mfeeds, true);
    for (size_t i = 0; i < loc.size() && i < n.outputs.size(); ++i) {
      if (!loc[i].defined() || !m.values.count(n.outputs[i])) continue;
      const Tensor& a = m.values.at(n.outputs[i]);
      if (!a.is_tensor() || !loc[i].is_tensor() || !is_floating(a.dtype()) ||
          !is_floating(loc[i].dtype()))
        continue;
      // Gradients below the format's normal range (exempt: loss scaling is their remedy, and
      // the dynamic scaler grows S while no overflow occurs); forward values are not.
      Diff d = diff(a, loc[i], max_finite(a.dtype()), is_grad ? low_range(a.dtype()) : LowRange{});
      if (i < loc_abs.size() && c.tol > 0)
        d.max_ref = std::max(d.max_ref, kSumUlps * std::ldexp(1.0, -24) * max_abs(loc_abs[i]) / c.tol);
      c.local.add(n.outputs[i], d.abs, d.rel());
      c.local_all_rel = std::max(c.local_all_rel, d.rel_all());
      if (d.underflow) {
        c.underflow_grad += d.underflow;
        if (d.underflow_max > c.underflow_max) {
          c.underflow_max = d.underflow_max;
          c.underflow_value = n.outputs[i];
        }
      }
      if (d.overflow) {
        (is_grad ? c.overflow_grad : c.overflow_out) += d.overflow;
        if (d.overflow_max > c.overflow_max) {
          c.overflow_max = d.overflow_max;
          c.overflow_value = n.outputs[i];
        }
      }
    }
  }
  for (NodeCheck& c : rep.nodes) {
    // A forward value beyond the format's range fails; gradient values that overflow fail only
    // when the parameter gradients are not finite either (else the overflow was masked on the
    // way, e.g. by a ReLU's zero gradient, and the trainer takes the step as PyTorch would).
    c.ok = !(c.local.rel > c.tol) && !std::isnan(c.local.rel) && c.overflow_out == 0 &&
           (c.overflow_grad == 0 || rep.grads_finite);
    if (!c.ok) ++rep.failing;
    const double ratio = c.tol > 0 ? c.local.rel / c.tol : c.local.rel;
    if (rep.worst_node.empty() || ratio > rep.worst_ratio) {
      rep.worst_node = c.node;
      rep.worst_ratio = ratio;
    }
  }
}

}  // namespace

namespace {

std::string num(double v, bool any = true) {
  if (!any) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

}  // namespace

std::string check_table(const CheckReport& r) {
  std::ostringstream s;
  for (const auto& note : r.notes) s << note << "\n";
  size_t w = 4;
  for (const auto& c : r.nodes) w = std::max(w, c.node.size());
  w = std::min<size_t>(w, 60);
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %-24s %-4s %9s %9s %9s %9s %9s %9s %s\n",
                static_cast<int>(w), "node", "op", "prec", "out_abs", "out_rel", "grad_abs",
                "grad_rel", "local_rel", "tol", "ok");
  s << line;
  for (const auto& c : r.nodes) {
    std::snprintf(line, sizeof line, "%-*s %-24s %-4s %9s %9s %9s %9s %9s %9s %s\n",
                  static_cast<int>(w), c.node.c_str(), c.op.c_str(), precision_name(c.precision),
                  num(c.out.abs, c.out.any).c_str(), num(c.out.rel, c.out.any).c_str(),
                  num(c.grad.abs, c.grad.any).c_str(), num(c.grad.rel, c.grad.any).c_str(),
                  num(c.local.rel, c.local.any).c_str(), num(c.tol).c_str(),
                  !c.ok                 ? "FAIL"
                  : c.overflow_grad     ? "ok (overflow masked)"
                  : c.underflow_decides() ? "ok (underflow)"
                                        : "ok");
    s << line;
  }
  s << "summary: " << r.nodes.size() << " nodes checked, " << r.failing << " failing";
  if (!r.worst_node.empty()) {
    const NodeCheck* worst = nullptr;
    for (const auto& c : r.nodes)
      if (c.node == r.worst_node) worst = &c;
    s << ", worst node '" << r.worst_node << "' (" << worst->op << ", local rel "
      << num(worst->local.rel) << " in '" << worst->local.value << "', tol " << num(worst->tol)
      << ")";
  }
  if (r.forward_only) {
    for (const ValueError& e : r.outputs)
      s << "; output '" << e.value << "' end-to-end abs " << num(e.abs, e.any) << " rel "
        << num(e.rel, e.any);
  } else {
    s << "; loss " << r.loss_checked << " vs " << r.loss_ref << " (FP32), loss scale "
      << r.loss_scale;
    if (r.overflow_retries) s << " after " << r.overflow_retries << " overflow halvings";
  }
  s << "\n";
  auto overflow_text = [&](const NodeCheck& c) {
    const int64_t n = c.overflow_out + c.overflow_grad;
    return cat(n, c.overflow_out ? " output" : " gradient", n == 1 ? " value" : " values",
               " beyond ", precision_name(c.precision), "'s range (|v| up to ", num(c.overflow_max),
               ") in '", c.overflow_value, "'",
               r.forward_only ? std::string() : cat(" at loss scale ", r.loss_scale));
  };
  for (const auto& c : r.nodes) {
    if (c.ok && c.overflow_grad)
      s << "overflow masked: node '" << c.node << "' (" << c.op << ", "
        << precision_name(c.precision) << "): " << overflow_text(c)
        << "; every parameter gradient is finite, so the trainer takes this step\n";
    if (c.ok && c.underflow_decides())
      s << "underflow: node '" << c.node << "' (" << c.op << ", " << precision_name(c.precision)
        << "): " << c.underflow_grad << " gradient values below " << precision_name(c.precision)
        << "'s smallest normal (|v| up to " << num(c.underflow_max) << " in '" << c.underflow_value
        << "' at loss scale " << r.loss_scale << ") are within one subnormal step of the FP32 "
        << "kernel but lose relative precision (local rel " << num(c.local_all_rel)
        << " with them); a larger loss scale lifts them, as the dynamic scaler's growth does\n";
    if (c.ok) continue;
    s << "out of tolerance: node '" << c.node << "' (" << c.op << ", "
      << precision_name(c.precision) << "): ";
    if (c.overflow_out || c.overflow_grad)
      s << "overflow: " << overflow_text(c) << "\n";
    else
      s << "local rel " << num(c.local.rel) << " in '" << c.local.value << "' > tol "
        << num(c.tol) << "\n";
  }
  return s.str();
}

std::string check_json(const CheckReport& r) {
  auto err = [](const ValueError& e) -> nlohmann::json {
    if (!e.any) return nullptr;
    auto f = [](double v) -> nlohmann::json { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf"); };
    return {{"abs", f(e.abs)}, {"rel", f(e.rel)}, {"value", e.value}};
  };
  nlohmann::json j;
  j["mode"] = r.mode;
  j["notes"] = r.notes;
  j["precision"] = precision_name(r.precision);
  j["device"] = device_name(r.device);
  j["forward_only"] = r.forward_only;
  if (r.forward_only) {
    j["outputs"] = nlohmann::json::array();
    for (const ValueError& e : r.outputs) {
      nlohmann::json o = err(e);
      if (o.is_null()) o = {{"value", e.value}};  // not a float output: not compared
      j["outputs"].push_back(o);
    }
  } else {
    j["loss_scale"] = r.loss_scale;
    j["overflow_retries"] = r.overflow_retries;
    j["parameter_gradients_finite"] = r.grads_finite;
    j["loss"] = {{"checked", r.loss_checked}, {"reference", r.loss_ref}};
  }
  j["nodes"] = nlohmann::json::array();
  for (const auto& c : r.nodes)
    j["nodes"].push_back({{"node", c.node}, {"op", c.op}, {"precision", precision_name(c.precision)},
                          {"out", err(c.out)}, {"grad", err(c.grad)}, {"local", err(c.local)},
                          {"overflow", {{"forward", c.overflow_out},
                                        {"gradient", c.overflow_grad},
                                        {"max_abs", c.overflow_max},
                                        {"value", c.overflow_value}}},
                          {"underflow", {{"gradient", c.underflow_grad},
                                         {"max_abs", c.underflow_max},
                                         {"value", c.underflow_value},
                                         {"local_rel_with_it", c.local_all_rel}}},
                          {"tol", c.tol}, {"ok", c.ok}});
  j["summary"] = {{"nodes_checked", r.nodes.size()}, {"failing", r.failing},
                  {"worst_node", r.worst_node}, {"worst_local_rel_over_tol", r.worst_ratio},
                  {"ok", r.ok()}};
  return j.dump(2) + "\n";
}

}  // namespace oat::train
