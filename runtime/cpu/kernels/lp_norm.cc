// LpNormalization (opset 1; attributes in lp_norm_args.h) and its gradient LpNormalizationGrad
// (internal domain). Along `axis`, each lane x of X:
//   n = ||x||_p:   p = 1: n = Σ|x_i|     p = 2: n = sqrt(Σ x_i²)
//   y = x / n,  and y = 0 for a lane with n = 0.
// No epsilon: ONNX Runtime divides by the norm itself and writes 0 for a zero lane (checked with
// onnxruntime 1.31 on [0, 0, 0] -> [0, 0, 0], [1, -2, 2] -> [0.2, -0.4, 0.4] for p = 1 and
// [1/3, -2/3, 2/3] for p = 2), as ONNX's reference implementation does (0/0 := 0). The ONNX test
// data has no LpNormalization case.
//
// LpNormalizationGrad(dY, X) -> dX, attributes axis and p as the forward. With t = Σ_i dY_i x_i
// (so Σ_i dY_i y_i = t / n) and ∂n/∂x_j = y_j (p = 2) or sign(x_j) (p = 1):
//   dX_j = Σ_i dY_i ∂y_i/∂x_j = dY_j / n − (Σ_i dY_i x_i) / n² · ∂n/∂x_j
//   p = 2: dX_j = (dY_j − y_j Σ_i dY_i y_i) / n = dY_j / n − x_j t / n³
//   p = 1: dX_j = (dY_j − sign(x_j) Σ_i dY_i y_i) / n = (dY_j − sign(x_j) t / n) / n
// with sign(0) = 0 (the subgradient |x|' = 0 at 0, as PyTorch), computed as
// (dY_j − ∂n/∂x_j · (t / n)) / n, which never forms n³ (it would overflow or vanish in float for
// norms beyond about 1e±13). A lane with n = 0 gets dX = 0: its forward is the constant 0 chosen
// above, and 0 keeps NaN out of the gradient.
//
// Sums accumulate in double for F32 and F64 (F16/BF16 run on FP32 copies, in_fp32), results are
// rounded once.
#include <cmath>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/lp_norm_args.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// ||x||_p of the lane x[0], x[inner], ..., x[(len - 1) inner].
template <class T>
double lane_norm(const T* x, int64_t len, int64_t inner, int p) {
  double s = 0;
  for (int64_t j = 0; j < len; ++j) {
    const double v = static_cast<double>(x[j * inner]);
    s += p == 1 ? std::fabs(v) : v * v;
  }
  return p == 1 ? s : std::sqrt(s);
}

// Calls f(base, n) for every lane along the axis, in parallel: base is the offset of the lane's
// first element (its elements are base + j·inner, j < len) and n its norm ||x||_p.
template <class T, class F>
void for_each_lane(const LpNormArgs& a, const T* x, int64_t numel, F f) {
  parallel_chunks(a.outer * a.inner, numel >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t l = begin; l < end; ++l) {
                      const int64_t base = (l / a.inner) * a.len * a.inner + l % a.inner;
                      f(base, lane_norm(x + base, a.len, a.inner, a.p));
                    }
                  });
}

template <class T>
class LpNormKernel : public OpKernel {
 public:
  explicit LpNormKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const LpNormArgs a = lp_norm_args(ctx, x.shape());
    Tensor& yt = ctx.allocate_output(0, x.dtype(), x.shape());
    const T* xp = x.data<T>();
    T* y = yt.data<T>();
    const int64_t len = a.len, inner = a.inner;
    for_each_lane(a, xp, x.numel(), [&](int64_t base, double n) {
      for (int64_t j = 0; j < len; ++j) {
        const int64_t e = base + j * inner;
        y[e] = n == 0 ? T(0) : static_cast<T>(static_cast<double>(xp[e]) / n);
      }
    });
  }
};

template <class T>
class LpNormGradKernel : public OpKernel {
 public:
  explicit LpNormGradKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
      ctx.fail(cat("dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()), " and X ",
                   dtype_name(x.dtype()), " ", shape_str(x.shape()), " must match"));
    const LpNormArgs a = lp_norm_args(ctx, x.shape());
    Tensor& dxt = ctx.allocate_output(0, x.dtype(), x.shape());
    const T* xp = x.data<T>();
    const T* g = dy.data<T>();
    T* dx = dxt.data<T>();
    const int64_t len = a.len, inner = a.inner;
    const int p = a.p;
    for_each_lane(a, xp, x.numel(), [&](int64_t base, double n) {
      double t = 0;
      for (int64_t j = 0; j < len; ++j)
        t += static_cast<double>(g[base + j * inner]) * static_cast<double>(xp[base + j * inner]);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t e = base + j * inner;
        const double v = static_cast<double>(xp[e]);
        const double gy = static_cast<double>(g[e]);
        // ∂n/∂x_j: y_j (p = 2) or sign(x_j) (p = 1); t / n = Σ dY⊙y.
        const double dn = p == 2 ? v / n : (v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0);
        dx[e] = n == 0 ? T(0) : static_cast<T>((gy - dn * (t / n)) / n);
      }
    });
  }
};

}  // namespace

void register_lp_norm(KernelRegistry& r) {
  r.add(OpId::LpNormalization, Device::CPU, DType::F32, kernel_factory<LpNormKernel<float>>());
  r.add(OpId::LpNormalization, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<LpNormKernel<float>>()));
  r.add(OpId::LpNormalization, Device::CPU, DType::F64, kernel_factory<LpNormKernel<double>>());
  r.add(OpId::LpNormalizationGrad, Device::CPU, DType::F32,
        kernel_factory<LpNormGradKernel<float>>());
  r.add(OpId::LpNormalizationGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<LpNormGradKernel<float>>()));
  r.add(OpId::LpNormalizationGrad, Device::CPU, DType::F64,
        kernel_factory<LpNormGradKernel<double>>());
}

}  // namespace oat::cpu
