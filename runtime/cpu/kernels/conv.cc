// Conv (1-, 2-, 3-D, grouped, depthwise) on NCHW data.
//
//   Y[n, m, o] = B[m] + Σ_{c ∈ group(m), t ∈ kernel} W[m, c, t] · X[n, g·Cg + c, o·stride - pad +
//   t·dil]
//
// with X read as 0 in the padding. Three paths:
//   - depthwise (group == C, one input channel per group): a direct loop over taps, parallel over
//     (n, m) planes — a GEMM with K = k_size would be all overhead;
//   - pointwise (1x1, stride 1, no pads): Y_ng = W_g · X_ng on the NCHW layout itself;
//   - otherwise im2col (conv_im2col.h) + GEMM per (image, group).
// With at least as many (image, group) tasks as threads the tasks run in parallel, each with a
// single-threaded GEMM and its own im2col buffer; otherwise the tasks run in turn and Eigen
// spreads each GEMM over the threads.
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 GEMM packing
// (gemm_pack_rhs / ptranspose); it must be silenced before the first include pulls in immintrin.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/conv_im2col.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

void register_conv_transpose(KernelRegistry& r);  // conv_transpose.cc

namespace {

// Depthwise: Y[n, m] = B[m] + Σ_t W[m, 0, t] · X[n, m / mult, o·stride - pad + t·dil].
template <class T>
void depthwise(const T* x, const T* wt, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
               const Window3& w) {
  const int64_t mult = M / C, P = w.out_size(), plane = w.in_size(), ks = w.k_size();
  const int64_t OD = w.out[0], OH = w.out[1], OW = w.out[2];
#pragma omp parallel for schedule(static) if (N * M * P * ks > (1 << 15))
  for (int64_t nm = 0; nm < N * M; ++nm) {
    const int64_t n = nm / M, m = nm % M;
    const T* xc = x + (n * C + m / mult) * plane;
    const T* wm = wt + m * ks;
    T* yp = y + nm * P;
    std::fill(yp, yp + P, bias ? bias[m] : T(0));
    for (int64_t e = 0; e < w.k[2]; ++e) {
      const int64_t off_x = e * w.dil[2] - w.pad[2];
      int64_t x0, x1;
      valid_range(off_x, w.stride[2], w.in[2], OW, &x0, &x1);
      for (int64_t a = 0; a < w.k[0]; ++a)
        for (int64_t b = 0; b < w.k[1]; ++b) {
          const T wv = wm[(a * w.k[1] + b) * w.k[2] + e];
          for (int64_t oz = 0; oz < OD; ++oz) {
            const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
            if (iz < 0 || iz >= w.in[0]) continue;
            for (int64_t oy = 0; oy < OH; ++oy) {
              const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
              if (iy < 0 || iy >= w.in[1]) continue;
              const T* xr = xc + (iz * w.in[1] + iy) * w.in[2];
              T* yr = yp + (oz * OH + oy) * OW;
              if (w.stride[2] == 1) {
                for (int64_t ox = x0; ox < x1; ++ox) yr[ox] += wv * xr[ox + off_x];
              } else {
                for (int64_t ox = x0; ox < x1; ++ox) yr[ox] += wv * xr[ox * w.stride[2] + off_x];
              }
            }
          }
        }
    }
  }
}

template <class T>
class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const Node& node)
      : attrs_(parse_window_attrs(node)), group_(node.attr_int("group", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.input_or_null(2);
    if (X.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(X.shape())));
    if (W.rank() != X.rank())
      ctx.fail(cat("W ", shape_str(W.shape()), " and X ", shape_str(X.shape()),
                   " must have the same rank"));
    const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), G = group_;
    if (G < 1 || C % G != 0 || M % G != 0 || W.dim(1) * G != C)
      ctx.fail(cat("X ", shape_str(X.shape()), " and W ", shape_str(W.shape()),
                   " do not match group=", G, " (need C = W.shape[1] * group, M % group == 0)"));
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
      ctx.fail(cat("X, W and B must share a dtype (X is ", dtype_name(X.dtype()), ")"));
    if (B && (B->rank() != 1 || B->dim(0) != M))
      ctx.fail(cat("B ", shape_str(B->shape()), " must be [", M, "] for W ", shape_str(W.shape())));
    std::vector<int64_t> kernel(W.shape().begin() + 2, W.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)
      ctx.fail(cat("kernel_shape ", shape_str(attrs_.kernel_shape), " does not match W ",
                   shape_str(W.shape())));
    const Window3 w = forward_window(ctx, attrs_, X.shape(), kernel);

    Shape y_shape = {N, M};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), y_shape);
    if (Y.numel() == 0) return;
    const T* x = X.data<T>();
    const T* wt = W.data<T>();
    const T* bias = B ? B->data<T>() : nullptr;
    T* y = Y.data<T>();

    if (G == C && W.dim(1) == 1 && G > 1) return depthwise(x, wt, bias, y, N, C, M, w);

    const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
    const int64_t plane = w.in_size();
    const bool pointwise = w.is_pointwise();
    // One (image, group) task: Y_ng = W_g · col(X_ng) (+ bias).
    auto task = [&](int64_t ng, bool parallel_inside) {
      const int64_t n = ng / G, g = ng % G;
      const T* xg = x + (n * C + g * Cg) * plane;
      T* yg = y + (n * M + g * Mg) * P;
      const T* col = xg;
      if (!pointwise) {
        T* buf = thread_scratch<T>(static_cast<size_t>(K * P));
        im2col(xg, Cg, w, buf, parallel_inside);
        col = buf;
      }
      if (bias)
        for (int64_t m = 0; m < Mg; ++m) std::fill(yg + m * P, yg + (m + 1) * P, bias[g * Mg + m]);
      gemm(wt + g * Mg * K, col, yg, Mg, P, K, bias != nullptr);
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
};

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add(OpId::Conv, Device::CPU, DType::F32, kernel_factory<ConvKernel<float>>());
  r.add(OpId::Conv, Device::CPU, DType::F64, kernel_factory<ConvKernel<double>>());
  register_conv_transpose(r);
}

}  // namespace oat::cpu
