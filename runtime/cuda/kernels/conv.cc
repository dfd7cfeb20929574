// Conv forward and ConvGrad (backward data, filter, bias) through cuDNN 9's convolution API.
// Each kernel keeps one plan per (X, W, dtype) shape: descriptors and the algorithms cuDNN's
// heuristics rank first (cudnn_desc.h: no benchmarking, no synchronisation), chosen once and
// reused; workspaces come from the caching allocator.
// Math: FP32 accumulation everywhere (compute type FLOAT); F16/BF16 ranked for tensor cores
// (CUDNN_TENSOR_OP_MATH); F32 without TF32 (CUDNN_FMA_MATH) so it matches the CPU reference. Each
// call runs with the math type cuDNN ranked its algorithm with, always FMA for F32 (cudnn_desc.h:
// run_math).
// Geometry (output size, auto_pad) comes from the CPU's conv_geometry. cuDNN pads both ends
// alike, so a window whose begin and end padding differ (TF/Keras 'same' with stride 2 on an
// even input: 0 before, 1 after; a Pad folded into the Conv) runs on X zero-padded by the excess
// (pad − p before, pad_end − p after, p = min of the two) with symmetric padding p:
//   Y  = Xp ⋆ W + B,   dXp = BackwardData(W, dY), dX = dXp cropped back,   dW = BackwardFilter(Xp,
//   dY)
// (zero_pad.h: one Pad-kernel launch each way).
//
//   Y  = X ⋆ W + B                                  (cross-correlation, groups)
//   dX = cudnnConvolutionBackwardData(W, dY)        dW = ...BackwardFilter(X, dY)
//   dB[m] = Σ_{n, spatial} dY[n, m, ...]            (FP32 reduction, conv_bias.h; the bias add
//                                                    too)
// ConvGrad's grad_type = 1 (FLOAT; runtime/grad_type.h) with F16/BF16 operands: dB is the FP32
// reduction of dY stored in F32 without rounding; dW is NOT direct: cuDNN's legacy backward-filter
// API writes dW in X's data type, so dW is computed in F16/BF16 into scratch (FP32 accumulation,
// one rounding) and widened to F32 by one cast kernel.
// Empty tensors (N = 0, no channels) skip cuDNN, whose descriptors reject 0 dims: Y = B (or 0),
// dX = 0, dW = 0, dB = 0.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/conv_bias.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/kernels/zero_pad.h"
#include "runtime/cuda/register.h"
#include "runtime/grad_type.h"

namespace oat::cuda {

namespace {

struct ConvPlan {
  Shape y_shape;
  // Asymmetric padding: X is padded by these (per dim of X, 0 for N and C) before cuDNN runs
  // with the symmetric rest; xp_shape is that padded shape. Empty: no explicit padding.
  std::vector<int64_t> x_begin, x_end;
  Shape xp_shape;
  // X or W has no elements: no cuDNN call (its descriptors reject 0 dims); Y = B or zeros, the
  // gradients zeros. Only the descriptors of non-empty tensors are set.
  bool empty = false;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  ConvAlgo<cudnnConvolutionFwdAlgo_t> fwd;
  ConvAlgo<cudnnConvolutionBwdDataAlgo_t> bwd_data;
  ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> bwd_filter;
};

// Descriptors for X [N, C, s...] ⋆ W [M, C/group, k...].
std::unique_ptr<ConvPlan> make_plan(const KernelContext& ctx, const cpu::WindowAttrs& attrs,
                                    int64_t group, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    ctx.fail(cat("X ", shape_str(x.shape()), " and W ", shape_str(w.shape()),
                 " must be (N, C, spatial...) and (M, C/group, kernel...)"));
  if (w.dtype() != x.dtype())
    ctx.fail(cat("X is ", dtype_name(x.dtype()), " but W is ", dtype_name(w.dtype())));
  if (group < 1 || x.dim(1) != w.dim(1) * group || w.dim(0) % group != 0)
    ctx.fail(cat("channels do not match: X ", shape_str(x.shape()), ", W ", shape_str(w.shape()),
                 ", group ", group));
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const cpu::Window3 win = cpu::forward_window(ctx, attrs, x.shape(), kernel);
  auto plan = std::make_unique<ConvPlan>();
  plan->y_shape = {x.dim(0), w.dim(0)};
  for (int64_t d : win.out_shape()) plan->y_shape.push_back(d);
  const int sd = std::max(win.nd, 2);  // cuDNN's spatial rank
  std::vector<int> pad, stride, dil;
  std::vector<int64_t> x_begin(x.shape().size(), 0), x_end(x.shape().size(), 0);
  bool asymmetric = false;
  for (int s = 3 - sd; s < 3; ++s) {
    const int64_t p = std::min(win.pad[s], win.pad_end[s]);
    if (s >= 3 - win.nd) {  // a dim of X (cuDNN's rank may add a leading 1)
      const size_t d = x.shape().size() - static_cast<size_t>(3 - s);
      x_begin[d] = win.pad[s] - p;
      x_end[d] = win.pad_end[s] - p;
      asymmetric |= x_begin[d] != 0 || x_end[d] != 0;
    }
    pad.push_back(static_cast<int>(p));
    stride.push_back(static_cast<int>(win.stride[s]));
    dil.push_back(static_cast<int>(win.dil[s]));
  }
  if (asymmetric) {
    plan->x_begin = x_begin;
    plan->x_end = x_end;
    plan->xp_shape = x.shape();
    for (size_t d = 0; d < x_begin.size(); ++d) plan->xp_shape[d] += x_begin[d] + x_end[d];
  }
  const DType t = x.dtype();
  plan->empty = x.numel() == 0 || w.numel() == 0;
  if (numel(plan->y_shape) > 0) plan->y.set(t, plan->y_shape);
  if (!plan->empty) {
    plan->x.set(t, asymmetric ? plan->xp_shape : x.shape());
    plan->w.set(t, w.shape());
    plan->conv.set(t, pad, stride, dil, group);
  }
  return plan;
}

// Plans by (X shape, W shape, dtype).
class PlanCache {
 public:
  ConvPlan& get(const KernelContext& ctx, const cpu::WindowAttrs& attrs, int64_t group,
                const Tensor& x, const Tensor& w, bool backward) {
    auto key = std::make_tuple(x.shape(), w.shape(), x.dtype());
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make_plan(ctx, attrs, group, x, w)).first;
    ConvPlan& p = *it->second;
    if (p.empty) return p;
    cudnnHandle_t h = cuda_context(ctx).cudnn();
    if (!backward && !fwd_ready_.count(key)) {
      p.fwd = forward_algo(ctx, h, p.x, p.w, p.conv, p.y);
      fwd_ready_.insert(key);
    }
    if (backward && !bwd_ready_.count(key)) {
      p.bwd_data = backward_data_algo(ctx, h, p.w, p.y, p.conv, p.x);
      p.bwd_filter = backward_filter_algo(ctx, h, p.x, p.y, p.conv, p.w);
      bwd_ready_.insert(key);
    }
    return p;
  }

 private:
  using Key = std::tuple<Shape, Shape, DType>;
  std::map<Key, std::unique_ptr<ConvPlan>> plans_;
  std::set<Key> fwd_ready_, bwd_ready_;
};

const float kOne = 1.f, kZero = 0.f;

void zero_fill(const KernelContext& ctx, Tensor& t) {
  if (t.nbytes()) CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, t.nbytes(), stream_of(ctx)));
}

// X as cuDNN reads it: padded by the plan's excess when the padding is asymmetric.
Tensor conv_input(KernelContext& ctx, const ConvPlan& p, const Tensor& x) {
  if (p.xp_shape.empty()) return x;
  Tensor xp(x.dtype(), p.xp_shape, Device::CUDA);
  zero_pad_into(ctx, x, xp, p.x_begin);
  return xp;
}

class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const Node& n)
      : attrs_(cpu::parse_window_attrs(n)), group_(n.attr_int("group", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ConvPlan& p = plans_.get(ctx, attrs_, group_, x, w, false);
    CudaContext& cc = cuda_context(ctx);
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.y_shape);
    const Tensor* b = ctx.input_or_null(2);
    if (b && (b->numel() != w.dim(0) || b->dtype() != x.dtype()))
      ctx.fail(cat("bias ", dtype_name(b->dtype()), " ", shape_str(b->shape()), " must be ",
                   dtype_name(x.dtype()), " [", w.dim(0), "]"));
    if (y.numel() == 0) return;
    if (p.empty) {  // C = 0 (an empty sum)
      zero_fill(ctx, y);
    } else {
      const Tensor xp = conv_input(ctx, p, x);
      Tensor ws = cc.scratch(p.fwd.workspace);
      CUDNN_CHECK(cudnnConvolutionForward(cc.cudnn(), &kOne, p.x.get(), xp.raw_data(), p.w.get(),
                                          w.raw_data(), p.conv.with_math(p.fwd.math), p.fwd.algo,
                                          ws.raw_data(), p.fwd.workspace, &kZero, p.y.get(),
                                          y.raw_data()));
    }
    if (b) add_channel_bias(ctx, *b, y);
  }

 private:
  cpu::WindowAttrs attrs_;
  int64_t group_;
  PlanCache plans_;
};

// ConvGrad(dY, X, W) -> (dX, dW, dB), each only when the graph asks for it.
class ConvGradKernel : public OpKernel {
 public:
  explicit ConvGradKernel(const Node& n)
      : attrs_(cpu::parse_window_attrs(n)),
        group_(n.attr_int("group", 1)),
        fp32_weight_grads_(weight_grads_in_fp32(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& w = ctx.input(2);
    ConvPlan& p = plans_.get(ctx, attrs_, group_, x, w, true);
    if (dy.shape() != p.y_shape || dy.dtype() != x.dtype())
      ctx.fail(cat("dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()), " must be ",
                   dtype_name(x.dtype()), " ", shape_str(p.y_shape)));
    CudaContext& cc = cuda_context(ctx);
    // grad_type FLOAT with F16/BF16 operands: dW and dB in F32 (F32 operands: nothing changes).
    const bool widen = fp32_weight_grads_ && x.dtype() != DType::F32;
    const bool padded = !p.xp_shape.empty();
    if (ctx.output_requested(0)) {
      Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
      if (p.empty) {
        zero_fill(ctx, dx);
      } else {
        // Asymmetric padding: the gradient of the padded X, then its crop back to X.
        Tensor dxp = padded ? Tensor(x.dtype(), p.xp_shape, Device::CUDA) : dx;
        Tensor ws = cc.scratch(p.bwd_data.workspace);
        CUDNN_CHECK(cudnnConvolutionBackwardData(
            cc.cudnn(), &kOne, p.w.get(), w.raw_data(), p.y.get(), dy.raw_data(),
            p.conv.with_math(p.bwd_data.math), p.bwd_data.algo, ws.raw_data(), p.bwd_data.workspace,
            &kZero, p.x.get(), dxp.raw_data()));
        if (padded) {
          std::vector<int64_t> crop(p.x_begin.size());
          for (size_t d = 0; d < crop.size(); ++d) crop[d] = -p.x_begin[d];
          zero_pad_into(ctx, dxp, dx, crop);
        }
      }
    }
    if (ctx.output_requested(1)) {
      Tensor& dw = ctx.allocate_output(1, widen ? DType::F32 : w.dtype(), w.shape());
      if (p.empty) {
        zero_fill(ctx, dw);
      } else {
        // cuDNN writes dW in X's type: with `widen`, into scratch, then one F16/BF16 -> F32 cast.
        Tensor dw_low = widen ? Tensor(w.dtype(), w.shape(), Device::CUDA) : dw;
        const Tensor xp = conv_input(ctx, p, x);
        Tensor ws = cc.scratch(p.bwd_filter.workspace);
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(
            cc.cudnn(), &kOne, p.x.get(), xp.raw_data(), p.y.get(), dy.raw_data(),
            p.conv.with_math(p.bwd_filter.math), p.bwd_filter.algo, ws.raw_data(),
            p.bwd_filter.workspace, &kZero, p.w.get(), dw_low.raw_data()));
        if (widen)
          launch_cast(elem_type(w.dtype()), ElemType::F32, dw_low.raw_data(), dw.raw_data(),
                      dw.numel(), stream_of(ctx));
      }
    }
    if (ctx.output_requested(2)) {
      Tensor& db = ctx.allocate_output(2, widen ? DType::F32 : x.dtype(), {w.dim(0)});
      channel_bias_grad(ctx, dy, db);
    }
  }

 private:
  cpu::WindowAttrs attrs_;
  int64_t group_;
  bool fp32_weight_grads_;  // grad_type = FLOAT
  PlanCache plans_;
};

}  // namespace

void register_conv(KernelRegistry& r) {
  add_floats(r, OpId::Conv, kernel_factory<ConvKernel>());
  add_floats(r, OpId::ConvGrad, kernel_factory<ConvGradKernel>());
}

}  // namespace oat::cuda
