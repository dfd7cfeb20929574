// ConvTransposeGrad(dY, X, W) -> (dX, dW, dB): the gradient of ConvTranspose (conv_transpose.cc),
// with its attributes (group, strides, pads, dilations, auto_pad, kernel_shape, output_padding,
// output_shape). Only the outputs the graph asks for are computed.
//
// ConvTranspose is Y_ng = B + col2im(W_gᵀ · X_ng), the adjoint of a Conv whose input is Y and whose
// output is X (conv_transpose_window). So its gradient is that Conv run forward on dY:
//   col_ng = im2col(dY_ng)                 (Mg·k x Pin, Pin = X's positions)
//   dX_ng  = W_g · col_ng                  (Cg x Pin; W_g = W[g·Cg:(g+1)·Cg] is Cg x Mg·k)
//   dW_g   = Σ_n X_ng · col_ngᵀ            (Cg x Mg·k)
//   dB[m]  = Σ_n Σ_o dY[n, m, o]
// Both GEMMs share one im2col block per tile of (image, position) columns (grad_conv_backward.h).
// grad_type = 1 (FLOAT; runtime/grad_type.h): dW and dB in float32; with F16/BF16 operands they
// are the FP32 kernel's accumulation itself (low_precision.h in_fp32), not rounded to 16 bits.
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 GEMM packing; it must be
// silenced before the first include pulls in immintrin.h (as in conv.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <type_traits>

#include "runtime/cpu/kernels/grad_conv_backward.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

namespace {

template <class T>
void gemm_backward(const T* dy, const T* x, const T* wt, T* dx, T* dw, int64_t N, int64_t C,
                   int64_t M, int64_t G, const Window3& w) {
  const int64_t Cg = C / G, Mg = M / G, K = Mg * w.k_size();
  const int64_t Pin = w.out_size(), Pout = w.in_size(), threads = num_threads();
  const bool pointwise = w.is_pointwise();
  const BackwardTiles tiles = backward_tiles(N, Pin, K, Cg, G, threads);
  const int64_t tasks = G * tiles.chunks;
  if (dw) std::fill(dw, dw + C * K, T(0));
  ThreadAccumulators<T> acc(dw, C * K, dw && threads > 1 && tasks >= threads ? threads : 1);
  run_backward_tasks(tasks, threads, [&](int64_t t, bool inside) {
    const int64_t g = t / tiles.chunks, j = t % tiles.chunks;
    const int64_t n0 = j * tiles.images, n1 = std::min(N, n0 + tiles.images);
    Eigen::Map<const RowMajorMatrix<T>> Wg(wt + g * Cg * K, Cg, K);
    T* dwg = dw ? acc.mine() + g * Cg * K : nullptr;
    auto dy_of = [&](int64_t n) { return dy + (n * M + g * Mg) * Pout; };
    auto x_of = [&](int64_t n) { return x + (n * C + g * Cg) * Pin; };
    auto dx_of = [&](int64_t n) { return dx + (n * C + g * Cg) * Pin; };
    if (n1 - n0 == 1) {  // one image, `width` positions at a time
      const int64_t n = n0;
      for (int64_t p0 = 0; p0 < Pin; p0 += tiles.width) {
        const int64_t width = std::min(Pin, p0 + tiles.width) - p0;
        const T* col = dy_of(n) + p0;  // pointwise: dY is its own column matrix
        int64_t ld = Pout;
        if (!pointwise) {
          T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
          im2col(dy_of(n), Mg, w, p0, p0 + width, buf, width, inside);
          col = buf;
          ld = width;
        }
        ConstStridedMap<T> Col(col, K, width, Eigen::OuterStride<>(ld));
        if (dwg)
          threaded_product(StridedMap<T>(dwg, Cg, K, Eigen::OuterStride<>(K)),
                           ConstStridedMap<T>(x_of(n) + p0, Cg, width, Eigen::OuterStride<>(Pin)),
                           Col.transpose(), true);
        if (dx)
          threaded_product(StridedMap<T>(dx_of(n) + p0, Cg, width, Eigen::OuterStride<>(Pin)), Wg,
                           Col, false);
      }
      return;
    }
    // Images [n0, n1) side by side: col is K x (images·Pin); `d` holds their X rows, then dX.
    const int64_t width = (n1 - n0) * Pin;
    T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
    T* d = thread_scratch<T, 1>(static_cast<size_t>(Cg * width));
    for (int64_t n = n0; n < n1; ++n)
      im2col_image(dy_of(n), Mg, w, buf + (n - n0) * Pin, width, inside);
    Eigen::Map<const RowMajorMatrix<T>> Col(buf, K, width);
    Eigen::Map<RowMajorMatrix<T>> D(d, Cg, width);
    if (dwg) {
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t c = 0; c < Cg; ++c)
          std::copy(x_of(n) + c * Pin, x_of(n) + (c + 1) * Pin, d + c * width + (n - n0) * Pin);
      threaded_product(Eigen::Map<RowMajorMatrix<T>>(dwg, Cg, K), D, Col.transpose(), true);
    }
    if (dx) {
      threaded_product(D, Wg, Col, false);
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t c = 0; c < Cg; ++c) {
          const T* src = d + c * width + (n - n0) * Pin;
          std::copy(src, src + Pin, dx_of(n) + c * Pin);
        }
    }
  });
  if (dw) acc.finish();
}

template <class T>
class ConvTransposeGradKernel : public OpKernel {
 public:
  explicit ConvTransposeGradKernel(const Node& node)
      : attrs_(parse_window_attrs(node)),
        group_(node.attr_int("group", 1)),
        output_padding_(node.attr_ints("output_padding")),
        output_shape_(node.attr_ints("output_shape")) {
    check_weight_grad_type(node, std::is_same_v<T, double> ? DType::F64 : DType::F32);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dY = ctx.input(0);
    const Tensor& X = ctx.input(1);
    const Tensor& W = ctx.input(2);
    check_conv_ranks(ctx, X.shape(), W.shape());
    if (dY.dtype() != X.dtype() || W.dtype() != X.dtype())
      ctx.fail(cat("dY, X and W must share a dtype (dY is ", dtype_name(dY.dtype()), ", X ",
                   dtype_name(X.dtype()), ", W ", dtype_name(W.dtype()), ")"));
    const int64_t N = X.dim(0), C = X.dim(1), G = group_;
    check_conv_transpose_groups(ctx, X.shape(), W.shape(), G);
    const int64_t M = W.dim(1) * G;
    const std::vector<int64_t> kernel = conv_kernel_of(ctx, attrs_.kernel_shape, W.shape());
    const Window3 w =
        conv_transpose_window(ctx, attrs_, output_padding_, output_shape_, X.shape(), kernel);
    Shape y_shape = {N, M};
    for (int s = 3 - w.nd; s < 3; ++s) y_shape.push_back(w.in[s]);
    if (dY.shape() != y_shape)
      ctx.fail(cat("dY ", shape_str(dY.shape()), " does not match the ConvTranspose output ",
                   shape_str(y_shape), " of X ", shape_str(X.shape()), " and W ",
                   shape_str(W.shape())));

    const T* dy = dY.data<T>();
    T *dx, *dw;
    if (!conv_grad_outputs(ctx, X, W, dy, N, M, w.in_size(), dx, dw)) return;
    gemm_backward(dy, X.data<T>(), W.data<T>(), dx, dw, N, C, M, G, w);
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_grad_conv_transpose(KernelRegistry& r) {
  r.add(OpId::ConvTransposeGrad, Device::CPU, DType::F32,
        kernel_factory<ConvTransposeGradKernel<float>>());
  r.add(OpId::ConvTransposeGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<ConvTransposeGradKernel<float>>(), weight_grad_io));
  r.add(OpId::ConvTransposeGrad, Device::CPU, DType::F64,
        kernel_factory<ConvTransposeGradKernel<double>>());
}

}  // namespace oat::cpu
