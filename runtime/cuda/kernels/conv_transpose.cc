// ConvTranspose and ConvTransposeGrad through cuDNN, the semantics of the CPU's conv_transpose.cc
// and grad_conv_transpose.cc (same checks and messages).
//
// ConvTranspose is the adjoint (the data gradient) of the Conv whose input is the ConvTranspose
// output Y [N, M, out...] and whose output is the ConvTranspose input X [N, C, in...]; W
// [C, M/group, k...] is that Conv's filter as it stands. The CPU's conv_transpose_window gives
// that Conv's geometry from group, strides, pads, dilations, auto_pad, output_padding and
// output_shape, so:
//   Y     = cudnnConvolutionBackwardData(W, dy = X) + B
//   dX    = cudnnConvolutionForward(x = dY, W)           (the Conv itself, run on dY)
//   dW    = cudnnConvolutionBackwardFilter(x = dY, dy = X)
//   dB[m] = Σ_{n, spatial} dY[n, m, ...]                 (FP32 reduction; conv_bias.h)
// FP32 accumulation; F16/BF16 on tensor cores, F32 without TF32 (cudnn_desc.h). Algorithms are
// chosen once per (X, W, dtype) and cached in the kernel; workspaces from CudaContext::scratch.
// grad_type = 1 (FLOAT; runtime/grad_type.h) with F16/BF16 operands, as ConvGrad in conv.cc: dB
// is the FP32 Sum reduction of dY stored in F32 unrounded; dW is computed by cuDNN in the operand
// type (its legacy backward-filter API writes dW in X's type: FP32 accumulation, one rounding)
// into scratch and widened to F32 by one cast kernel.
//
// Padding: cuDNN pads both ends by the begin padding p. Along an axis, the Conv over Y (length
// `out`, dilated kernel extent dk) then has floor((out + 2p − dk)/stride) + 1 windows, starting at
// o·stride − p, exactly the CPU's windows when that count is X's length `in`:
//   out + 2p − dk = stride·(in − 1) + output_padding + p − pad_end,
// so the condition is 0 ≤ output_padding + p − pad_end < stride (symmetric pads with
// output_padding < stride always qualify; so does an output_shape up to stride − 1 −
// output_padding beyond the natural size, pad_end then being negative). Where the end padding is
// larger (SAME_UPPER with an odd total, as Keras' Conv2DTranspose(padding='same', strides=2)
// exports; larger explicit end pads), Y is computed e = pad_end − p − output_padding longer at
// the end (its end padding e smaller, which makes the condition hold) and cropped to its length;
// the gradients read dY zero-padded by e (zero_pad.h). Negative begin pads and end pads too small
// for any length are reported as unsupported.
// Empty tensors (N = 0, no channels) skip cuDNN: Y = B (or 0), dW = 0, dB = 0.
#include "runtime/cuda/kernels/conv_transpose.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/conv_bias.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/zero_pad.h"
#include "runtime/cuda/register.h"
#include "runtime/grad_type.h"

namespace oat::cuda {

CudnnConvWindow transposed_conv_window(const KernelContext& ctx, const cpu::Window3& w,
                                       const std::vector<int64_t>& output_padding,
                                       const Shape& x_shape, const Shape& w_shape) {
  CudnnConvWindow c;
  for (int s = 3 - std::max(w.nd, 2); s < 3; ++s) {
    const int64_t st = w.stride[s], dk = (w.k[s] - 1) * w.dil[s] + 1;
    const int64_t span = w.in[s] + 2 * w.pad[s] - dk;  // w.in: Y's length, that Conv's input
    if (w.pad[s] < 0 || span < 0 || span / st + 1 != w.out[s]) {
      const int i = s - (3 - w.nd);
      throw Unsupported(
          cat(ctx.node().describe(), ": padding ", w.pad[s], " before and ", w.pad_end[s],
              " after along spatial axis ", i, " (stride ", st, ", output_padding ",
              output_padding.empty() ? 0 : output_padding[static_cast<size_t>(i)],
              ") has no cuDNN transposed convolution: cuDNN pads both ends alike (X ",
              shape_str(x_shape), ", W ", shape_str(w_shape), ")"),
          "ConvTranspose(asymmetric pads)[cuda]");
    }
    c.pad.push_back(static_cast<int>(w.pad[s]));
    c.stride.push_back(static_cast<int>(st));
    c.dil.push_back(static_cast<int>(w.dil[s]));
  }
  return c;
}

namespace {

const float kOne = 1.f, kZero = 0.f;

struct ConvTransposeAttrs {
  cpu::WindowAttrs window;
  int64_t group;
  std::vector<int64_t> output_padding, output_shape;
  explicit ConvTransposeAttrs(const Node& n)
      : window(cpu::parse_window_attrs(n)),
        group(n.attr_int("group", 1)),
        output_padding(n.attr_ints("output_padding")),
        output_shape(n.attr_ints("output_shape")) {}
};

// Descriptors and algorithms for one (X, W, dtype). `empty`: X or W has no elements, so no cuDNN
// convolution runs (Y is then B or zeros, and the gradients zeros).
struct Plan {
  Shape y_shape;
  // Y as cuDNN computes it, longer at the end than y_shape where the end padding exceeds what
  // cuDNN's symmetric padding expresses; empty when equal.
  Shape yc_shape;
  bool empty = false;
  TensorDesc x, y;  // X [N, C, in...], Y [N, M, out...]
  FilterDesc w;
  ConvDesc conv;
  ConvAlgo<cudnnConvolutionBwdDataAlgo_t> forward;   // Y from X
  ConvAlgo<cudnnConvolutionFwdAlgo_t> grad_x;        // dX from dY
  ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> grad_w;  // dW from dY and X
  bool forward_ready = false, backward_ready = false;
};

// The checks of the CPU kernels, the geometry, and the descriptors.
std::unique_ptr<Plan> make_plan(const KernelContext& ctx, const ConvTransposeAttrs& a,
                                const Tensor& x, const Tensor& w) {
  cpu::check_conv_ranks(ctx, x.shape(), w.shape());
  const int64_t N = x.dim(0), G = a.group;
  cpu::check_conv_transpose_groups(ctx, x.shape(), w.shape(), G);
  const int64_t M = w.dim(1) * G;
  const std::vector<int64_t> kernel = cpu::conv_kernel_of(ctx, a.window.kernel_shape, w.shape());
  const cpu::Window3 win = cpu::conv_transpose_window(ctx, a.window, a.output_padding,
                                                      a.output_shape, x.shape(), kernel);
  auto plan = std::make_unique<Plan>();
  plan->y_shape = {N, M};
  for (int s = 3 - win.nd; s < 3; ++s) plan->y_shape.push_back(win.in[s]);
  // Extend Y at the end by the least e that gives cuDNN's Conv over it X's length of windows
  // (span = in + e + 2p − dk must reach stride·(out − 1)).
  cpu::Window3 wc = win;
  bool extended = false;
  for (int s = 3 - win.nd; s < 3; ++s) {
    const int64_t dk = (win.k[s] - 1) * win.dil[s] + 1;
    const int64_t e = win.stride[s] * (win.out[s] - 1) - (win.in[s] + 2 * win.pad[s] - dk);
    if (win.pad[s] >= 0 && e > 0) {
      wc.in[s] += e;
      wc.pad_end[s] -= e;
      extended = true;
    }
  }
  if (extended) {
    plan->yc_shape = {N, M};
    for (int s = 3 - win.nd; s < 3; ++s) plan->yc_shape.push_back(wc.in[s]);
  }

  const CudnnConvWindow cw =
      transposed_conv_window(ctx, extended ? wc : win, a.output_padding, x.shape(), w.shape());
  const DType t = x.dtype();
  plan->empty = x.numel() == 0 || w.numel() == 0;
  if (numel(plan->y_shape) > 0) plan->y.set(t, extended ? plan->yc_shape : plan->y_shape);
  if (!plan->empty) {
    plan->x.set(t, x.shape());
    plan->w.set(t, w.shape());
    plan->conv.set(t, cw.pad, cw.stride, cw.dil, G);
  }
  return plan;
}

// Plans by (X shape, W shape, dtype); the algorithms of each direction chosen on first use.
class PlanCache {
 public:
  Plan& get(const KernelContext& ctx, const ConvTransposeAttrs& a, const Tensor& x, const Tensor& w,
            bool backward) {
    auto key = std::make_tuple(x.shape(), w.shape(), x.dtype());
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make_plan(ctx, a, x, w)).first;
    Plan& p = *it->second;
    if (p.empty) return p;
    cudnnHandle_t h = cuda_context(ctx).cudnn();
    if (!backward && !p.forward_ready) {
      p.forward = backward_data_algo(ctx, h, p.w, p.x, p.conv, p.y);
      p.forward_ready = true;
    }
    if (backward && !p.backward_ready) {
      p.grad_x = forward_algo(ctx, h, p.y, p.w, p.conv, p.x);
      p.grad_w = backward_filter_algo(ctx, h, p.y, p.x, p.conv, p.w);
      p.backward_ready = true;
    }
    return p;
  }

 private:
  std::map<std::tuple<Shape, Shape, DType>, std::unique_ptr<Plan>> plans_;
};

void zero_fill(const KernelContext& ctx, Tensor& t) {
  CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, t.nbytes(), stream_of(ctx)));  // 0.0 in every float
}

// ConvTranspose(X, W, [B]) -> Y.
class ConvTransposeKernel : public OpKernel {
 public:
  explicit ConvTransposeKernel(const Node& n) : attrs_(n) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.input_or_null(2);
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
      ctx.fail(cat("X, W and B must share a dtype (X is ", dtype_name(x.dtype()), ")"));
    Plan& p = plans_.get(ctx, attrs_, x, w, false);
    const int64_t M = p.y_shape[1];
    if (b && (b->rank() != 1 || b->dim(0) != M))
      ctx.fail(cat("B ", shape_str(b->shape()), " must be [", M, "] for W ", shape_str(w.shape()),
                   " and group=", attrs_.group));
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.y_shape);
    if (y.numel() == 0) return;
    CudaContext& cc = cuda_context(ctx);
    if (p.empty) {
      zero_fill(ctx, y);
    } else {
      // Extended (see the top): computed longer, then its leading part is Y.
      Tensor yc = p.yc_shape.empty() ? y : Tensor(x.dtype(), p.yc_shape, Device::CUDA);
      Tensor ws = cc.scratch(p.forward.workspace);
      CUDNN_CHECK(cudnnConvolutionBackwardData(
          cc.cudnn(), &kOne, p.w.get(), w.raw_data(), p.x.get(), x.raw_data(),
          p.conv.with_math(p.forward.math), p.forward.algo, ws.raw_data(), p.forward.workspace,
          &kZero, p.y.get(), yc.raw_data()));
      if (!p.yc_shape.empty()) zero_pad_into(ctx, yc, y, std::vector<int64_t>(y.shape().size(), 0));
    }
    if (b) add_channel_bias(ctx, *b, y);
  }

 private:
  ConvTransposeAttrs attrs_;
  PlanCache plans_;
};

// ConvTransposeGrad(dY, X, W) -> (dX, dW, dB), each only when the graph asks for it.
class ConvTransposeGradKernel : public OpKernel {
 public:
  explicit ConvTransposeGradKernel(const Node& n)
      : attrs_(n), fp32_weight_grads_(weight_grads_in_fp32(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& w = ctx.input(2);
    cpu::check_conv_ranks(ctx, x.shape(), w.shape());
    if (dy.dtype() != x.dtype() || w.dtype() != x.dtype())
      ctx.fail(cat("dY, X and W must share a dtype (dY is ", dtype_name(dy.dtype()), ", X ",
                   dtype_name(x.dtype()), ", W ", dtype_name(w.dtype()), ")"));
    Plan& p = plans_.get(ctx, attrs_, x, w, true);
    if (dy.shape() != p.y_shape)
      ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match the ConvTranspose output ",
                   shape_str(p.y_shape), " of X ", shape_str(x.shape()), " and W ",
                   shape_str(w.shape())));
    CudaContext& cc = cuda_context(ctx);
    // grad_type FLOAT with F16/BF16 operands: dW and dB in F32 (F32 operands: nothing changes).
    const bool widen = fp32_weight_grads_ && x.dtype() != DType::F32;
    const DType wt = widen ? DType::F32 : x.dtype();
    // Extended Y (see the top): the Conv runs over dY zero-padded to that length.
    Tensor dyc = dy;
    if (!p.yc_shape.empty() && !p.empty && (ctx.output_requested(0) || ctx.output_requested(1))) {
      dyc = Tensor(dy.dtype(), p.yc_shape, Device::CUDA);
      zero_pad_into(ctx, dy, dyc, std::vector<int64_t>(dy.shape().size(), 0));
    }
    if (ctx.output_requested(2)) {
      const int64_t M = p.y_shape[1];
      Tensor& db = ctx.allocate_output(2, wt, {M});
      channel_bias_grad(ctx, dy, db);
    }
    if (ctx.output_requested(0)) {
      Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
      if (dx.numel() > 0 && p.empty) zero_fill(ctx, dx);
      if (!p.empty) {
        Tensor ws = cc.scratch(p.grad_x.workspace);
        CUDNN_CHECK(cudnnConvolutionForward(cc.cudnn(), &kOne, p.y.get(), dyc.raw_data(), p.w.get(),
                                            w.raw_data(), p.conv.with_math(p.grad_x.math),
                                            p.grad_x.algo, ws.raw_data(), p.grad_x.workspace,
                                            &kZero, p.x.get(), dx.raw_data()));
      }
    }
    if (ctx.output_requested(1)) {
      Tensor& dw = ctx.allocate_output(1, wt, w.shape());
      if (dw.numel() > 0 && p.empty) zero_fill(ctx, dw);
      if (!p.empty) {
        // cuDNN writes dW in X's type: with `widen`, into scratch, then one cast to F32.
        Tensor dw_low = widen ? Tensor(x.dtype(), w.shape(), Device::CUDA) : dw;
        Tensor ws = cc.scratch(p.grad_w.workspace);
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(
            cc.cudnn(), &kOne, p.y.get(), dyc.raw_data(), p.x.get(), x.raw_data(),
            p.conv.with_math(p.grad_w.math), p.grad_w.algo, ws.raw_data(), p.grad_w.workspace,
            &kZero, p.w.get(), dw_low.raw_data()));
        if (widen)
          launch_cast(elem_type(x.dtype()), ElemType::F32, dw_low.raw_data(), dw.raw_data(),
                      dw.numel(), stream_of(ctx));
      }
    }
  }

 private:
  ConvTransposeAttrs attrs_;
  bool fp32_weight_grads_;  // grad_type = FLOAT
  PlanCache plans_;
};

}  // namespace

void register_conv_transpose(KernelRegistry& r) {
  add_floats(r, OpId::ConvTranspose, kernel_factory<ConvTransposeKernel>());
  add_floats(r, OpId::ConvTransposeGrad, kernel_factory<ConvTransposeGradKernel>());
}

}  // namespace oat::cuda
