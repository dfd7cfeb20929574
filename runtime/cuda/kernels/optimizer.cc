// Fused mixed-precision kernels on CUDA, the device side of the graph ops in
// runtime/cpu/kernels/optimizer.cc (same inputs, outputs and formulas):
//
// UnscaleAndCheck(inv_scale, G₁..Gₙ) -> (G₁'..Gₙ' FP32, found_inf): ONE launch over all
//   gradients (a table of (src, dst, n) in device memory, one block per 4096-element chunk);
//   found_inf is a device bool that no one reads on the host: it feeds the updates' `skip`.
// SGDUpdate(P, G, V?, lr, skip?) -> (P', V'[, P_low])
// AdamUpdate(P, G, M, V, lr, step, skip?) -> (P', M', V'[, P_low])
//   P, V, M are the FP32 masters; G is FP32 or F16/BF16 (widened in the kernel). `skip` stays on
//   the device: when it is true the kernel copies every input to its output, so the step
//   decision needs no host synchronisation. An optional last output P_low receives P' rounded
//   to the 'working_type' attribute (runtime/working_type.h: FLOAT16 or BFLOAT16), the working
//   copy the FP16 nodes of the next step read, written in the same pass.
// MultiSGDUpdate / MultiAdamUpdate (runtime/multi_update.h): every parameter's update in ONE
//   launch (a table of per-parameter pointers in device memory, one block per 4096-element
//   chunk, as UnscaleAndCheck), each element computed as by SGDUpdate / AdamUpdate; donated P,
//   V, M and W are updated in place.
// GlobalNormClip(G₁..Gₙ, max_norm) -> (G₁'..Gₙ', norm): ‖G‖ = √(Σᵢ Σ Gᵢ²) from per-gradient
//   FP32 sums of squares, Gᵢ' = Gᵢ·min(1, max_norm/(‖G‖ + 1e-6)), the coefficient computed and
//   applied on the device (every Gᵢ' is written, also when the coefficient is 1: no host sync).
// The loss-scale update after the step: CudaContext::amp_step (runtime/kernel.h's DeviceAmpState).
#include <cmath>
#include <tuple>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/optimizer_impl.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"
#include "runtime/multi_update.h"
#include "runtime/working_type.h"

namespace oat::cuda {

namespace {

void check_f32(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::F32)
    ctx.fail(cat(what, " must be float32 (the master copy), got ", dtype_name(t.dtype())));
}

void check_grad(const KernelContext& ctx, const Tensor& p, const Tensor& g) {
  if (g.shape() != p.shape())
    ctx.fail(cat("the gradient has shape ", shape_str(g.shape()), ", the parameter ",
                 shape_str(p.shape())));
  if (g.dtype() != DType::F32 && g.dtype() != DType::F16 && g.dtype() != DType::BF16)
    ctx.fail(cat("the gradient has dtype ", dtype_name(g.dtype())));
}

const bool* skip_flag(const KernelContext& ctx, int i) {
  const Tensor* s = ctx.input_or_null(i);
  if (!s) return nullptr;
  if (s->dtype() != DType::Bool || s->numel() != 1)
    ctx.fail(cat("skip must be a bool scalar, got ", dtype_name(s->dtype()), " ",
                 shape_str(s->shape())));
  return s->data<bool>();
}

// Input i, a scalar of dtype `want` that the executor staged on the device (reads_on_host is
// false for it): the kernel reads it there, so no host synchronisation and nothing baked into a
// captured CUDA graph.
template <typename T>
const T* device_scalar(const KernelContext& ctx, int i, DType want, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != want || t.numel() != 1)
    ctx.fail(cat(what, " must be a ", dtype_name(want), " scalar, got ", dtype_name(t.dtype()),
                 " ", shape_str(t.shape())));
  if (t.device() != Device::CUDA) ctx.fail(cat(what, " was not staged on the device"));
  return t.data<T>();
}

void unscale_and_check(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (n < 1) ctx.fail("needs inv_scale and at least one gradient");
  if (ctx.num_outputs() != n + 1)
    ctx.fail(cat(n, " gradients need ", n + 1, " outputs (the gradients and found_inf), got ",
                 ctx.num_outputs()));
  const Tensor& inv = ctx.input(0);
  if (inv.numel() != 1 || inv.dtype() != DType::F32)
    ctx.fail(cat("inv_scale must be a float32 scalar, got ", dtype_name(inv.dtype()), " ",
                 shape_str(inv.shape())));
  CudaContext& cc = cuda_context(ctx);
  std::vector<UnscaleEntry> table;
  int64_t blocks = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i + 1);
    if (g.dtype() != DType::F32 && g.dtype() != DType::F16 && g.dtype() != DType::BF16)
      ctx.fail(cat("gradient ", i, " has dtype ", dtype_name(g.dtype()), "; gradients are floats"));
    Tensor& o = ctx.allocate_output(i, DType::F32, g.shape());
    if (g.numel() == 0) continue;
    table.push_back({g.raw_data(), o.data<float>(), g.numel(), blocks,
                     static_cast<int>(elem_type(g.dtype())), 0});
    blocks += (g.numel() + kUnscaleChunk - 1) / kUnscaleChunk;
  }
  Tensor& found = ctx.allocate_output(n, DType::Bool, {});
  CUDA_CHECK(cudaMemsetAsync(found.raw_data(), 0, 1, cc.stream()));
  if (table.empty()) return;
  Tensor dev_table = cc.scratch(table.size() * sizeof(UnscaleEntry));
  // Pageable source: the copy is staged before cudaMemcpyAsync returns, so `table` may go.
  cc.upload_bytes(dev_table.raw_data(), table.data(), table.size() * sizeof(UnscaleEntry));
  launch_unscale(static_cast<const UnscaleEntry*>(dev_table.raw_data()),
                 static_cast<int>(table.size()), blocks, inv.data<float>(),
                 found.data<bool>(), cc.stream());
}

// Output o of an update, shaped as the parameter p: input i's storage when the run donated it
// (the Trainer's state: updated in place, no copy back), else a new tensor. The update kernels
// read each element before writing it, so the same buffer may be read and written.
Tensor& in_place(KernelContext& ctx, int i, int o, const Tensor& p) {
  if (ctx.input_donated(i) && ctx.input(i).device() == Device::CUDA &&
      ctx.input(i).dtype() == DType::F32 && ctx.input(i).shape() == p.shape())
    return ctx.reuse_input(i, o);
  return ctx.allocate_output(o, DType::F32, p.shape());
}

// The optional working-copy output W' at index `out`: (pointer, ElemType) or (nullptr, 0); the
// storage of input `w_in` (the current working copy W) when the run donated it and it has the
// working dtype and P's shape, else a new tensor.
std::pair<void*, int> working_copy(KernelContext& ctx, int out, const Tensor& p, int w_in = -1) {
  if (!ctx.output_requested(out)) return {nullptr, 0};
  const int64_t code = ctx.node().attr_int(kWorkingTypeAttr, 10);
  const std::optional<DType> t = working_dtype(code);
  if (!t) ctx.fail(cat("working_type ", code, " must be 10 (FLOAT16) or 16 (BFLOAT16)"));
  const Tensor* w = w_in >= 0 ? ctx.input_or_null(w_in) : nullptr;
  Tensor& low = w && ctx.input_donated(w_in) && w->device() == Device::CUDA &&
                        w->dtype() == *t && w->shape() == p.shape()
                    ? ctx.reuse_input(w_in, out)
                    : ctx.allocate_output(out, *t, p.shape());
  return {low.raw_data(), static_cast<int>(elem_type(*t))};
}

// The node's SGD / Adam attributes and its device scalars (lr at input `lr_in`; Adam's step
// after it).
SgdParams sgd_params(KernelContext& ctx, int lr_in) {
  const Node& nd = ctx.node();
  SgdParams prm{};
  prm.momentum = nd.attr_float("momentum", 0.0f);
  prm.dampening = nd.attr_float("dampening", 0.0f);
  prm.weight_decay = nd.attr_float("weight_decay", 0.0f);
  prm.nesterov = nd.attr_int("nesterov", 0) != 0;
  prm.lr = device_scalar<float>(ctx, lr_in, DType::F32, "the learning rate");
  return prm;
}

AdamParams adam_params(KernelContext& ctx, int lr_in) {
  const Node& nd = ctx.node();
  AdamParams prm{};
  prm.beta1 = nd.attr_float("beta1", 0.9f);
  prm.beta2 = nd.attr_float("beta2", 0.999f);
  prm.eps = nd.attr_float("epsilon", 1e-8f);
  prm.weight_decay = nd.attr_float("weight_decay", 0.0f);
  prm.decoupled = nd.attr_int("decoupled", 0) != 0;
  prm.lr = device_scalar<float>(ctx, lr_in, DType::F32, "the learning rate");
  prm.step = device_scalar<int64_t>(ctx, lr_in + 1, DType::I64, "the step");
  // A step on the host is checked here; one on the device (the trainer's counter) is >= 1 by
  // construction.
  const Tensor& step = ctx.input(lr_in + 1);
  if (step.device() == Device::CPU && step.item_as_int() < 1)
    ctx.fail(cat("step must be >= 1, got ", step.item_as_int()));
  return prm;
}

// One parameter's update, checked, its outputs placed (in place where donated): P, G and the
// state at inputs in0.. (SGD: V, optional; Adam: M, V), the outputs at out0.. (P', then V' or
// M', V', then W'), W at input w_in (-1: none). `momentum`: SGD's (V' only when non-zero).
UpdateEntry update_entry(KernelContext& ctx, bool adam, float momentum, int in0, int out0,
                         int w_in) {
  const std::string& name = ctx.node().inputs[static_cast<size_t>(in0)];
  const Tensor& p = ctx.input(in0);
  const Tensor& g = ctx.input(in0 + 1);
  check_f32(ctx, p, "the parameter");
  check_grad(ctx, p, g);
  UpdateEntry e{};
  e.p = p.data<float>();
  e.g = g.raw_data();
  e.g_type = static_cast<int>(elem_type(g.dtype()));
  e.n = p.numel();
  e.po = in_place(ctx, in0, out0, p).data<float>();
  int w_out = out0 + 2;
  if (adam) {
    const Tensor& m = ctx.input(in0 + 2);
    const Tensor& v = ctx.input(in0 + 3);
    check_f32(ctx, m, "the first moment");
    check_f32(ctx, v, "the second moment");
    if (m.shape() != p.shape() || v.shape() != p.shape())
      ctx.fail(cat("the moments of '", name, "' and the parameter differ in shape"));
    e.m = m.data<float>();
    e.v = v.data<float>();
    e.mo = in_place(ctx, in0 + 2, out0 + 1, p).data<float>();
    e.vo = in_place(ctx, in0 + 3, out0 + 2, p).data<float>();
    w_out = out0 + 3;
  } else {
    const Tensor* v = ctx.input_or_null(in0 + 2);
    if (momentum != 0.f && !v) ctx.fail(cat("momentum needs the velocity of '", name, "'"));
    if (v) {
      check_f32(ctx, *v, "the velocity");
      if (v->shape() != p.shape())
        ctx.fail(cat("the velocity of '", name, "' and the parameter differ in shape"));
      e.v = v->data<float>();
    }
    if (momentum != 0.f) e.vo = in_place(ctx, in0 + 2, out0 + 1, p).data<float>();
    else if (ctx.output_requested(out0 + 1) && v) ctx.set_output(out0 + 1, *v);
  }
  std::tie(e.low, e.low_type) = working_copy(ctx, w_out, p, w_in);
  return e;
}

void sgd_update(KernelContext& ctx) {
  const SgdParams prm = sgd_params(ctx, 3);
  const UpdateEntry e = update_entry(ctx, false, prm.momentum, 0, 0, -1);
  launch_sgd(e.p, e.g, e.g_type, e.v, e.po, e.vo, e.low, e.low_type, e.n, prm, skip_flag(ctx, 4),
             stream_of(ctx));
}

void adam_update(KernelContext& ctx) {
  const AdamParams prm = adam_params(ctx, 4);
  const UpdateEntry e = update_entry(ctx, true, 0.f, 0, 0, -1);
  launch_adam(e.p, e.g, e.g_type, e.m, e.v, e.po, e.mo, e.vo, e.low, e.low_type, e.n, prm,
              stream_of(ctx), skip_flag(ctx, 6));
}

void multi_update(KernelContext& ctx) {
  const MultiUpdateLayout l = multi_update_layout(ctx.node().op);
  const int groups = multi_update_groups(ctx.node());
  const bool adam = l.single == OpId::AdamUpdate;
  const int lr_in = groups * l.in_group;
  SgdParams sgd{};
  AdamParams am{};
  if (adam) am = adam_params(ctx, lr_in);
  else sgd = sgd_params(ctx, lr_in);
  const bool* skip = skip_flag(ctx, lr_in + l.scalars - 1);
  std::vector<UpdateEntry> table;
  int64_t blocks = 0;
  for (int k = 0; k < groups; ++k) {
    const int in0 = k * l.in_group;
    UpdateEntry e = update_entry(ctx, adam, sgd.momentum, in0, k * l.out_group, in0 + l.working_in);
    if (e.n == 0) continue;
    e.first_block = blocks;
    blocks += (e.n + kUpdateChunk - 1) / kUpdateChunk;
    table.push_back(e);
  }
  if (table.empty()) return;
  CudaContext& cc = cuda_context(ctx);
  Tensor dev_table = cc.scratch(table.size() * sizeof(UpdateEntry));
  cc.upload_bytes(dev_table.raw_data(), table.data(), table.size() * sizeof(UpdateEntry));
  const auto* t = static_cast<const UpdateEntry*>(dev_table.raw_data());
  const int entries = static_cast<int>(table.size());
  if (adam) launch_multi_adam(t, entries, blocks, am, skip, cc.stream());
  else launch_multi_sgd(t, entries, blocks, sgd, skip, cc.stream());
}

void global_norm_clip(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (n < 1) ctx.fail("needs at least one gradient and max_norm");
  const Tensor& max_norm = ctx.input(n);
  if (max_norm.dtype() != DType::F32 || max_norm.numel() != 1)
    ctx.fail(cat("max_norm must be a float32 scalar, got ", dtype_name(max_norm.dtype()), " ",
                 shape_str(max_norm.shape())));
  const cudaStream_t s = stream_of(ctx);
  Tensor partial(DType::F32, {n}, Device::CUDA);
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i);
    if (g.dtype() != DType::F32)
      ctx.fail(cat("gradient ", i, " has dtype ", dtype_name(g.dtype()), "; clipping runs on the "
                   "FP32 gradients"));
    ReducePlan p;  // everything reduced into one value
    p.outputs = 1;
    p.count = g.numel();
    p.red_rank = g.numel() > 1 ? 1 : 0;
    p.red_dims[0] = g.numel();
    p.red_strides[0] = 1;
    if (g.numel() == 0) {
      CUDA_CHECK(cudaMemsetAsync(partial.data<float>() + i, 0, sizeof(float), s));
      continue;
    }
    launch_reduce(ReduceOp::SumSquare, ElemType::F32, g.raw_data(), partial.data<float>() + i, p, s);
  }
  Tensor norm(DType::F32, {}, Device::CUDA), coef(DType::F32, {}, Device::CUDA);
  launch_clip_coef(partial.data<float>(), n, max_norm.data<float>(), norm.data<float>(),
                   coef.data<float>(), s);
  for (int i = 0; i < n; ++i) {
    const Tensor& g = ctx.input(i);
    Tensor& o = ctx.allocate_output(i, DType::F32, g.shape());
    launch_scale_by(g.data<float>(), coef.data<float>(), o.data<float>(), g.numel(), s);
  }
  if (ctx.output_requested(n)) ctx.set_output(n, norm);
}

}  // namespace

void register_optimizer(KernelRegistry& r) {
  // Keyed by the first input's dtype: inv_scale (F32) and the F32 master parameter.
  r.add(OpId::UnscaleAndCheck, Device::CUDA, DType::F32, function_kernel(unscale_and_check));
  r.add(OpId::SGDUpdate, Device::CUDA, DType::F32, function_kernel(sgd_update));
  r.add(OpId::AdamUpdate, Device::CUDA, DType::F32, function_kernel(adam_update));
  r.add(OpId::MultiSGDUpdate, Device::CUDA, DType::F32, function_kernel(multi_update));
  r.add(OpId::MultiAdamUpdate, Device::CUDA, DType::F32, function_kernel(multi_update));
  r.add(OpId::GlobalNormClip, Device::CUDA, DType::F32, function_kernel(global_norm_clip));
}

}  // namespace oat::cuda
