// Optimizer steps and gradient clipping as kernels (internal domain), so the optimizer is part
// of the training graph and runs on whatever device the graph runs on. Parameters and their
// state are fp32 (the master weights); updated values are new outputs that the trainer feeds
// back on the next step.
//
// SGDUpdate(P, G, V?, lr, skip?) -> (P', V')      attrs: momentum μ, dampening τ, nesterov,
//                                                  weight_decay λ (PyTorch's torch.optim.SGD)
//   g  = G + λ·P
//   V' = μ·V + (1−τ)·g            (only when μ ≠ 0; V starts at zero, so V₁ = g as in PyTorch)
//   d  = g + μ·V' (Nesterov) | V' (momentum) | g (plain)
//   P' = P − lr·d
//
// AdamUpdate(P, G, M, V, lr, step, skip?) -> (P', M', V')   attrs: beta1 β₁, beta2 β₂, epsilon ε,
//                                          weight_decay λ, decoupled (1: AdamW, 0: Adam)
//   Adam:  g = G + λ·P                 AdamW: P ← P·(1 − lr·λ), g = G
//   M' = β₁·M + (1−β₁)·g,   V' = β₂·V + (1−β₂)·g²
//   P' = P − lr · (M'/(1−β₁ᵗ)) / (√(V'/(1−β₂ᵗ)) + ε)           (t = step, 1-based)
//
// With skip = true (an overflowing mixed-precision step) every output is its input unchanged.
// Optional last output (SGDUpdate: 2, AdamUpdate: 3): the working copy, P' (P when skipped)
// rounded once to the `working_type` attribute (FLOAT16 or BFLOAT16; runtime/working_type.h).
//
// UnscaleAndCheck(inv_scale, G₁..Gₙ) -> (G₁'..Gₙ', found_inf)     (torch.amp's
//   _amp_foreach_non_finite_check_and_unscale_): one pass over every gradient,
//   Gᵢ' = Gᵢ · inv_scale computed in FP32 (F64 when inv_scale is F64) whatever the storage
//   type of Gᵢ (F16/BF16 gradients are widened), found_inf = any element of any Gᵢ' is Inf/NaN
//   (bool scalar). Comes before GlobalNormClip, so clipping sees the true gradient norm; its
//   found_inf feeds the optimizer updates' `skip`.
//
// GlobalNormClip(G₁..Gₙ, max_norm) -> (G₁'..Gₙ', norm):  ‖G‖ = √(Σᵢ Σ Gᵢ²),
//   Gᵢ' = Gᵢ · min(1, max_norm / (‖G‖ + 1e-6))       (torch.nn.utils.clip_grad_norm_)
//
// MultiSGDUpdate / MultiAdamUpdate (runtime/multi_update.h): every parameter's update in one
// node; on the CPU each group runs the single-tensor kernel above, as its own node.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "runtime/cpu/register.h"
#include "runtime/multi_update.h"
#include "runtime/working_type.h"

namespace oat::cpu {

namespace {

bool skip_requested(const KernelContext& ctx, int index) {
  const Tensor* s = ctx.input_or_null(index);
  return s && s->numel() == 1 && s->item_as_double() != 0.0;
}

// The working copy at output `out`, when the node asks for one: Cast(updated, working_type).
void write_working_copy(KernelContext& ctx, int out, const Tensor& updated) {
  if (!ctx.output_requested(out)) return;
  const int64_t code = ctx.node().attr_int(kWorkingTypeAttr, 10);
  const std::optional<DType> t = working_dtype(code);
  if (!t) ctx.fail(cat("working_type ", code, " must be 10 (FLOAT16) or 16 (BFLOAT16)"));
  ctx.set_output(out, cast_tensor(updated, *t));
}

void check_same_shape(const KernelContext& ctx, const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape() != b.shape())
    ctx.fail(cat(what, " has shape ", shape_str(b.shape()), ", the parameter ", shape_str(a.shape())));
}

template <class T>
void sgd_update(KernelContext& ctx) {
  const Node& n = ctx.node();
  const double mu = n.attr_float("momentum", 0.0f);
  const double tau = n.attr_float("dampening", 0.0f);
  const double lambda = n.attr_float("weight_decay", 0.0f);
  const bool nesterov = n.attr_int("nesterov", 0) != 0;
  const Tensor& p = ctx.input(0);
  const Tensor& g = ctx.input(1);
  const Tensor* v = ctx.input_or_null(2);
  check_same_shape(ctx, p, g, "the gradient");
  if (mu != 0.0 && !v) ctx.fail("momentum needs the velocity input");
  if (v) check_same_shape(ctx, p, *v, "the velocity");
  if (skip_requested(ctx, 4)) {
    ctx.set_output(0, p);
    if (ctx.output_requested(1) && v) ctx.set_output(1, *v);
    write_working_copy(ctx, kSgdWorkingOutput, p);
    return;
  }
  const T lr = static_cast<T>(ctx.input(3).item_as_double());
  Tensor& po = ctx.allocate_output(0, p.dtype(), p.shape());
  T* pv = po.data<T>();
  const T* pi = p.data<T>();
  const T* gi = g.data<T>();
  T* vo = nullptr;
  const T* vi = nullptr;
  if (mu != 0.0) {
    vo = ctx.allocate_output(1, p.dtype(), p.shape()).template data<T>();
    vi = v->data<T>();
  } else if (ctx.output_requested(1) && v) {
    ctx.set_output(1, *v);
  }
  const int64_t count = p.numel();
#pragma omp parallel for if (count > 65536)
  for (int64_t i = 0; i < count; ++i) {
    T d = gi[i] + static_cast<T>(lambda) * pi[i];
    if (vo) {
      const T vn = static_cast<T>(mu) * vi[i] + static_cast<T>(1.0 - tau) * d;
      vo[i] = vn;
      d = nesterov ? d + static_cast<T>(mu) * vn : vn;
    }
    pv[i] = pi[i] - lr * d;
  }
  write_working_copy(ctx, kSgdWorkingOutput, po);
}

template <class T>
void adam_update(KernelContext& ctx) {
  const Node& n = ctx.node();
  const double b1 = n.attr_float("beta1", 0.9f);
  const double b2 = n.attr_float("beta2", 0.999f);
  const double eps = n.attr_float("epsilon", 1e-8f);
  const double lambda = n.attr_float("weight_decay", 0.0f);
  const bool decoupled = n.attr_int("decoupled", 0) != 0;
  const Tensor& p = ctx.input(0);
  const Tensor& g = ctx.input(1);
  const Tensor& m = ctx.input(2);
  const Tensor& v = ctx.input(3);
  check_same_shape(ctx, p, g, "the gradient");
  check_same_shape(ctx, p, m, "the first moment");
  check_same_shape(ctx, p, v, "the second moment");
  if (skip_requested(ctx, 6)) {
    ctx.set_output(0, p);
    ctx.set_output(1, m);
    ctx.set_output(2, v);
    write_working_copy(ctx, kAdamWorkingOutput, p);
    return;
  }
  const double lr = ctx.input(4).item_as_double();
  const double t = static_cast<double>(ctx.input(5).item_as_int());
  if (t < 1) ctx.fail(cat("step must be >= 1, got ", t));
  const double c1 = 1.0 - std::pow(b1, t), c2 = 1.0 - std::pow(b2, t);
  // P' = P − (lr/c1)·M' / (√V'/√c2 + ε): PyTorch's arrangement of the bias corrections.
  const T step_size = static_cast<T>(lr / c1);
  const T inv_sqrt_c2 = static_cast<T>(1.0 / std::sqrt(c2));
  const T decay = static_cast<T>(decoupled ? 1.0 - lr * lambda : 1.0);
  const T l2 = static_cast<T>(decoupled ? 0.0 : lambda);
  Tensor& po_t = ctx.allocate_output(0, p.dtype(), p.shape());
  T* po = po_t.template data<T>();
  T* mo = ctx.allocate_output(1, p.dtype(), p.shape()).template data<T>();
  T* vo = ctx.allocate_output(2, p.dtype(), p.shape()).template data<T>();
  const T* pi = p.data<T>();
  const T* gi = g.data<T>();
  const T* mi = m.data<T>();
  const T* vi = v.data<T>();
  const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2), teps = static_cast<T>(eps);
  const int64_t count = p.numel();
  // Eigen array expressions over cache-sized blocks: they vectorise √ and ÷ (a plain loop's
  // std::sqrt stays scalar under -fmath-errno), 2x faster on a 200k-element weight.
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
#pragma omp parallel for if (count > 65536)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t lo = blk * kBlock, len = std::min(kBlock, count - lo);
    Eigen::Map<const Array> P(pi + lo, len), G(gi + lo, len), M(mi + lo, len), V(vi + lo, len);
    Eigen::Map<Array> PO(po + lo, len), MO(mo + lo, len), VO(vo + lo, len);
    if (l2 != T(0)) {
      MO = tb1 * M + (T(1) - tb1) * (G + l2 * P);
      VO = tb2 * V + (T(1) - tb2) * (G + l2 * P).square();
    } else {
      MO = tb1 * M + (T(1) - tb1) * G;
      VO = tb2 * V + (T(1) - tb2) * G.square();
    }
    PO = P * decay - step_size * MO / (VO.sqrt() * inv_sqrt_c2 + teps);
  }
  write_working_copy(ctx, kAdamWorkingOutput, po_t);
}

template <class T>
void global_norm_clip(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (n < 1) ctx.fail("needs at least one gradient and max_norm");
  const double max_norm = ctx.input(n).item_as_double();
  double sq = 0.0;
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i);
    const T* d = g.data<T>();
    const int64_t count = g.numel();
    // Σ Gᵢ² in fixed blocks summed in block order: the same bits whatever the thread count (an
    // OpenMP reduction combines per-thread partial sums in an unspecified order).
    constexpr int64_t kBlock = 16384;
    const int64_t blocks = (count + kBlock - 1) / kBlock;
    std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (blocks > 4)
    for (int64_t b = 0; b < blocks; ++b) {
      double s = 0.0;
      const int64_t end = std::min(count, (b + 1) * kBlock);
#pragma omp simd reduction(+ : s)  // fixed lanes: still the same bits at any thread count
      for (int64_t k = b * kBlock; k < end; ++k)
        s += static_cast<double>(d[k]) * static_cast<double>(d[k]);
      partial[static_cast<size_t>(b)] = s;
    }
    for (double s : partial) sq += s;
  }
  const double norm = std::sqrt(sq);
  const double coef = std::min(1.0, max_norm / (norm + 1e-6));
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i);
    if (coef >= 1.0) {
      ctx.set_output(i, g);
      continue;
    }
    Tensor& o = ctx.allocate_output(i, g.dtype(), g.shape());
    const T* s = g.data<T>();
    T* d = o.data<T>();
    const T c = static_cast<T>(coef);
    for (int64_t k = 0; k < g.numel(); ++k) d[k] = s[k] * c;
  }
  if (ctx.output_requested(n)) {
    Tensor& nt = ctx.allocate_output(n, DType::F32, {});
    nt.data<float>()[0] = static_cast<float>(norm);
  }
}

// Unscales one gradient into `out` (type O) and returns whether it holds an Inf or NaN.
template <class O>
bool unscale_into(const Tensor& g, O inv, Tensor& out) {
  return dispatch_dtype(g.dtype(), [&](auto tag) -> bool {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<T> && !std::is_same_v<T, Eigen::half> &&
                  !std::is_same_v<T, Eigen::bfloat16>) {
      throw Error(cat("gradient of dtype ", dtype_name(g.dtype()), " cannot be unscaled"));
    } else {
      const T* s = g.data<T>();
      O* d = out.data<O>();
      const int64_t count = g.numel();
      int bad = 0;
#pragma omp parallel for reduction(| : bad) if (count > 65536)
      for (int64_t k = 0; k < count; ++k) {
        const O v = static_cast<O>(s[k]) * inv;
        d[k] = v;
        bad |= !std::isfinite(v);
      }
      return bad != 0;
    }
  });
}

template <class O>
void unscale_and_check(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (n < 1) ctx.fail("needs inv_scale and at least one gradient");
  if (ctx.num_outputs() != n + 1)
    ctx.fail(cat(n, " gradients need ", n + 1, " outputs (the gradients and found_inf), got ",
                 ctx.num_outputs()));
  const Tensor& inv_t = ctx.input(0);
  if (inv_t.numel() != 1) ctx.fail(cat("inv_scale must be a scalar, got ", shape_str(inv_t.shape())));
  const O inv = static_cast<O>(inv_t.item_as_double());
  bool found = false;
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i + 1);
    if (!is_floating(g.dtype()))
      ctx.fail(cat("gradient ", i, " has dtype ", dtype_name(g.dtype()), "; gradients are floats"));
    Tensor& o = ctx.allocate_output(i, dtype_of<O>(), g.shape());
    found |= unscale_into<O>(g, inv, o);
  }
  Tensor& f = ctx.allocate_output(n, DType::Bool, {});
  f.data<bool>()[0] = found;
}

// The multi-tensor updates: group k is run as the node multi_update_part(node, k) (built once)
// with the single-tensor kernel, its outputs moved to the group's slots.
template <class T>
class MultiUpdate : public OpKernel {
 public:
  explicit MultiUpdate(const Node& n) : layout_(multi_update_layout(n.op)) {
    const int groups = multi_update_groups(n);
    for (int k = 0; k < groups; ++k) parts_.push_back(multi_update_part(n, k));
  }
  void compute(KernelContext& ctx) override {
    const auto single = layout_.single == OpId::SGDUpdate ? sgd_update<T> : adam_update<T>;
    const int scalars = static_cast<int>(parts_.size()) * layout_.in_group;  // lr
    for (size_t k = 0; k < parts_.size(); ++k) {
      std::vector<const Tensor*> in;
      const int in0 = static_cast<int>(k) * layout_.in_group;
      for (int i = 0; i < layout_.working_in; ++i) in.push_back(ctx.input_or_null(in0 + i));
      for (int i = scalars; i < ctx.num_inputs(); ++i) in.push_back(ctx.input_or_null(i));
      std::vector<Tensor> out(static_cast<size_t>(layout_.out_group));
      KernelContext part(parts_[k], std::move(in), &out, ctx.device());
      single(part);
      const int out0 = static_cast<int>(k) * layout_.out_group;
      for (int o = 0; o < layout_.out_group; ++o)
        if (out[static_cast<size_t>(o)].defined())
          ctx.set_output(out0 + o, std::move(out[static_cast<size_t>(o)]));
    }
  }

 private:
  MultiUpdateLayout layout_;
  std::vector<Node> parts_;
};

}  // namespace

void register_optimizer(KernelRegistry& r) {
  r.add(OpId::SGDUpdate, Device::CPU, DType::F32, function_kernel(sgd_update<float>));
  r.add(OpId::SGDUpdate, Device::CPU, DType::F64, function_kernel(sgd_update<double>));
  r.add(OpId::AdamUpdate, Device::CPU, DType::F32, function_kernel(adam_update<float>));
  r.add(OpId::AdamUpdate, Device::CPU, DType::F64, function_kernel(adam_update<double>));
  // Keyed by the first parameter's dtype, as the single updates.
  r.add(OpId::MultiSGDUpdate, Device::CPU, DType::F32, kernel_factory<MultiUpdate<float>>());
  r.add(OpId::MultiSGDUpdate, Device::CPU, DType::F64, kernel_factory<MultiUpdate<double>>());
  r.add(OpId::MultiAdamUpdate, Device::CPU, DType::F32, kernel_factory<MultiUpdate<float>>());
  r.add(OpId::MultiAdamUpdate, Device::CPU, DType::F64, kernel_factory<MultiUpdate<double>>());
  // Keyed by inv_scale's dtype: F32 (the training graph's) or F64 (double-precision tests).
  r.add(OpId::UnscaleAndCheck, Device::CPU, DType::F32, function_kernel(unscale_and_check<float>));
  r.add(OpId::UnscaleAndCheck, Device::CPU, DType::F64, function_kernel(unscale_and_check<double>));
  r.add(OpId::GlobalNormClip, Device::CPU, DType::F32, function_kernel(global_norm_clip<float>));
  r.add(OpId::GlobalNormClip, Device::CPU, DType::F64, function_kernel(global_norm_clip<double>));
}

}  // namespace oat::cpu
