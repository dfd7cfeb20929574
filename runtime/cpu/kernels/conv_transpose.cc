// ConvTranspose: the adjoint (gradient with respect to the input) of Conv, plus a bias.
//
//   col_ng = W_gᵀ · X_ng                      (Mg·k) x in,  W_g = W[g·Cg:(g+1)·Cg] is Cg x (Mg·k)
//   Y_ng   = B + col2im(col_ng)               scatter-add into the output image
//
// X is (N, C, in...), W is (C, M / group, k...), Y is (N, M, out...). Along each axis, with
// dk = (k - 1) · dilation + 1:
//   out = stride · (in - 1) + output_padding + dk - pad_begin - pad_end
// When output_shape is given (or auto_pad is SAME_*, where out = in · stride) the pads follow from
// total = stride · (in - 1) + output_padding + dk - out: SAME_UPPER puts the odd unit at the end
// (pad_begin = total / 2), otherwise at the beginning (pad_end = total / 2). A negative total
// (output_shape larger than the natural size) leaves zeros (+ bias) at the end.
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 GEMM packing
// (gemm_pack_rhs / ptranspose); it must be silenced before the first include pulls in immintrin.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/conv_im2col.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"  // conv_transpose_window
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

namespace {

template <class T>
class ConvTransposeKernel : public OpKernel {
 public:
  explicit ConvTransposeKernel(const Node& node)
      : attrs_(parse_window_attrs(node)),
        group_(node.attr_int("group", 1)),
        output_padding_(node.attr_ints("output_padding")),
        output_shape_(node.attr_ints("output_shape")) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.input_or_null(2);
    check_conv_ranks(ctx, X.shape(), W.shape());
    const int64_t N = X.dim(0), C = X.dim(1), G = group_;
    check_conv_transpose_groups(ctx, X.shape(), W.shape(), G);
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
      ctx.fail(cat("X, W and B must share a dtype (X is ", dtype_name(X.dtype()), ")"));
    const int64_t Cg = C / G, Mg = W.dim(1), M = Mg * G;
    if (B && (B->rank() != 1 || B->dim(0) != M))
      ctx.fail(cat("B ", shape_str(B->shape()), " must be [", M, "] for W ", shape_str(W.shape()),
                   " and group=", G));
    const std::vector<int64_t> kernel = conv_kernel_of(ctx, attrs_.kernel_shape, W.shape());
    // The geometry of the equivalent Conv: its input is our output Y, its output is our X.
    const Window3 w =
        conv_transpose_window(ctx, attrs_, output_padding_, output_shape_, X.shape(), kernel);

    Shape y_shape = {N, M};
    for (int s = 3 - w.nd; s < 3; ++s) y_shape.push_back(w.in[s]);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), y_shape);
    if (Y.numel() == 0) return;
    const T* x = X.data<T>();
    const T* wt = W.data<T>();
    const T* bias = B ? B->data<T>() : nullptr;
    T* y = Y.data<T>();

    const int64_t ks = w.k_size(), Pin = w.out_size(), Pout = w.in_size();
    const bool pointwise = w.is_pointwise();
    auto task = [&](int64_t ng, bool parallel_inside) {
      const int64_t n = ng / G, g = ng % G;
      const T* xg = x + (n * C + g * Cg) * Pin;
      T* yg = y + (n * M + g * Mg) * Pout;
      for (int64_t m = 0; m < Mg; ++m)
        std::fill(yg + m * Pout, yg + (m + 1) * Pout, bias ? bias[g * Mg + m] : T(0));
      Eigen::Map<const RowMajorMatrix<T>> Wg(wt + g * Cg * Mg * ks, Cg, Mg * ks);
      Eigen::Map<const RowMajorMatrix<T>> Xg(xg, Cg, Pin);
      if (pointwise) {
        threaded_product(Eigen::Map<RowMajorMatrix<T>>(yg, Mg, Pout), Wg.transpose(), Xg, true);
        return;
      }
      T* col = thread_scratch<T>(static_cast<size_t>(Mg * ks * Pin));
      threaded_product(Eigen::Map<RowMajorMatrix<T>>(col, Mg * ks, Pin), Wg.transpose(), Xg, false);
      col2im(col, Mg, w, yg, parallel_inside);
    };
    const int64_t tasks = N * G, threads = num_threads();
    if (threads > 1 && tasks >= threads && (tasks % threads == 0 || tasks >= 4 * threads)) {
#pragma omp parallel for schedule(static)
      for (int64_t ng = 0; ng < tasks; ++ng) task(ng, false);
    } else {
      for (int64_t ng = 0; ng < tasks; ++ng) task(ng, true);
    }
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_conv_transpose(KernelRegistry& r) {
  r.add(OpId::ConvTranspose, Device::CPU, DType::F32, kernel_factory<ConvTransposeKernel<float>>());
  r.add(OpId::ConvTranspose, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<ConvTransposeKernel<float>>()));
  r.add(OpId::ConvTranspose, Device::CPU, DType::F64,
        kernel_factory<ConvTransposeKernel<double>>());
}

}  // namespace oat::cpu
