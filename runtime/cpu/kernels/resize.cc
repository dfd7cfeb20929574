// Resize (opsets 10, 11, 13), Upsample (7, 9) and ResizeGrad on the CPU.
//
//   Resize(X, [roi], [scales], [sizes]) -> Y;  Resize-10, Upsample-9: (X, scales);  Upsample-7: X
//   Y[o] = extrapolation_value                          if some axis d has outside_d[o_d]
//        = Σ_{k_0..k_{r-1}} (Π_d w_d[o_d, k_d]) · X[idx_0[o_0, k_0], .., idx_{r-1}[o_{r-1},
//        k_{r-1}]]
//   ResizeGrad(dY, shape(X), [roi], [scales]) -> dX, the adjoint (PyTorch's upsample backward):
//   dX[j] = Σ_{o : idx_d[o_d, k_d] = j_d ∀d} (Π_d w_d[o_d, k_d]) · dY[o]   (outside outputs: none)
// The per-axis taps (idx, w, outside) and their inversion come from resize_geometry.h, which has
// every mode's formulas; the CUDA kernels use the same tables. Sums run with the last axis's taps
// fastest and the weight product from axis 0 up, in T (float for F32/F16/BF16, double for F64);
// F16/BF16 go through in_fp32 (one rounding per output). roi and scales stay FP32 in a low
// precision node (convert/fp32_slots.cc), or come in the storage type; both are read on the host.
#include <algorithm>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/resize_geometry.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

const Tensor* optional_input(const KernelContext& ctx, int i) {
  return i < 0 ? nullptr : ctx.input_or_null(i);
}

std::vector<int64_t> strides_of(const Shape& s) { return contiguous_strides(s); }

// Steps the multi-index `at` over `dims` (last fastest); false after the last one.
bool step(std::vector<int64_t>& at, const int64_t* dims, int r) {
  for (int d = r - 1; d >= 0; --d) {
    if (++at[d] < dims[d]) return true;
    at[d] = 0;
  }
  return false;
}

template <class T>
void resize_forward(const std::vector<ResizeAxis>& axes, const T* x, T* y, const Shape& xs,
                    const Shape& ys, T extrapolation) {
  const int r = static_cast<int>(xs.size());
  const std::vector<int64_t> st = strides_of(xs);
  std::vector<std::vector<int64_t>> off(r);
  std::vector<std::vector<T>> wt(r);
  std::vector<int64_t> taps(r);
  int64_t per_output = 1;
  for (int d = 0; d < r; ++d) {
    for (int64_t i : axes[d].idx) off[d].push_back(i * st[d]);
    for (double w : axes[d].w) wt[d].push_back(static_cast<T>(w));
    taps[d] = axes[d].taps;
    per_output *= taps[d];
  }
  const int64_t n = numel(ys);
  parallel_chunks(n, n * per_output * static_cast<int64_t>(sizeof(T)) >= kParallelBytes,
                  [&](int64_t b, int64_t e) {
                    std::vector<int64_t> o(r), k(r);
                    int64_t rem = b;
                    for (int d = r - 1; d >= 0; --d) o[d] = rem % ys[d], rem /= ys[d];
                    for (int64_t i = b; i < e; ++i, step(o, ys.data(), r)) {
                      bool outside = false;
                      for (int d = 0; d < r; ++d) outside |= axes[d].outside[o[d]] != 0;
                      if (outside) {
                        y[i] = extrapolation;
                        continue;
                      }
                      T acc = 0;
                      std::fill(k.begin(), k.end(), 0);
                      do {
                        T w = 1;
                        int64_t at = 0;
                        for (int d = 0; d < r; ++d) {
                          const size_t t = static_cast<size_t>(o[d] * taps[d] + k[d]);
                          w *= wt[d][t];
                          at += off[d][t];
                        }
                        acc += w * x[at];
                      } while (step(k, taps.data(), r));
                      y[i] = acc;
                    }
                  });
}

template <class T>
void resize_backward(const std::vector<ResizeAxis>& axes, const T* dy, T* dx, const Shape& xs,
                     const Shape& ys) {
  const int r = static_cast<int>(xs.size());
  const std::vector<int64_t> st = strides_of(ys);
  std::vector<ResizeAxisAdjoint> adj(r);
  std::vector<std::vector<T>> wt(r);
  for (int d = 0; d < r; ++d) {
    adj[d] = resize_adjoint(axes[d]);
    for (int64_t& p : adj[d].pos) p *= st[d];
    for (double w : adj[d].w) wt[d].push_back(static_cast<T>(w));
  }
  const int64_t n = numel(xs);
  parallel_chunks(n, n * static_cast<int64_t>(sizeof(T)) >= kParallelBytes / 4,
                  [&](int64_t b, int64_t e) {
                    std::vector<int64_t> j(r), len(r), k(r);
                    int64_t rem = b;
                    for (int d = r - 1; d >= 0; --d) j[d] = rem % xs[d], rem /= xs[d];
                    for (int64_t i = b; i < e; ++i, step(j, xs.data(), r)) {
                      bool empty = false;
                      for (int d = 0; d < r; ++d) {
                        len[d] = adj[d].first[j[d] + 1] - adj[d].first[j[d]];
                        empty |= len[d] == 0;
                      }
                      T acc = 0;
                      if (!empty) {
                        std::fill(k.begin(), k.end(), 0);
                        do {
                          T w = 1;
                          int64_t at = 0;
                          for (int d = 0; d < r; ++d) {
                            const size_t t = static_cast<size_t>(adj[d].first[j[d]] + k[d]);
                            w *= wt[d][t];
                            at += adj[d].pos[t];
                          }
                          acc += w * dy[at];
                        } while (step(k, len.data(), r));
                      }
                      dx[i] = acc;
                    }
                  });
}

// Resize, Upsample: T = float (F32, and F16/BF16 through in_fp32) or double.
template <class T>
class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(const Node& n) : a_(parse_resize_attrs(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const ResizeGeometry g =
        resize_geometry(ctx, a_, X.shape(), optional_input(ctx, a_.roi_input),
                        optional_input(ctx, a_.scales_input), optional_input(ctx, a_.sizes_input));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), g.y);
    if (Y.numel() == 0) return;
    resize_forward<T>(resize_axes(a_, g), X.data<T>(), Y.data<T>(), g.x, g.y,
                      static_cast<T>(a_.extrapolation));
  }

 private:
  ResizeAttrs a_;
};

// ResizeGrad(dY, shape(X), [roi], [scales]) -> dX.
template <class T>
class ResizeGradKernel : public OpKernel {
 public:
  explicit ResizeGradKernel(const Node& n) : a_(parse_resize_attrs(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dY = ctx.input(0);
    const Shape xs = ctx.input(1).to_int_vector();
    for (int64_t v : xs)
      if (v < 0) ctx.fail(cat("shape(X) ", shape_str(xs), " has a negative dimension"));
    const ResizeGeometry g =
        resize_grad_geometry(ctx, a_, xs, dY.shape(), optional_input(ctx, a_.roi_input),
                             optional_input(ctx, a_.scales_input));
    Tensor& dX = ctx.allocate_output(0, dY.dtype(), xs);
    if (dX.numel() == 0) return;
    resize_backward<T>(resize_axes(a_, g), dY.data<T>(), dX.data<T>(), g.x, g.y);
  }

 private:
  ResizeAttrs a_;
};

}  // namespace

void register_resize(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  for (OpId op : {OpId::Resize, OpId::Upsample}) {
    r.add(op, cpu, DType::F32, kernel_factory<ResizeKernel<float>>());
    r.add(op, cpu, DType::F64, kernel_factory<ResizeKernel<double>>());
    // roi and scales may stay FP32 beside F16/BF16 data.
    r.add(op, cpu, kLowFloats,
          in_fp32(kernel_factory<ResizeKernel<float>>(), Fp32Io::of({1, 2}, {})));
  }
  r.add(OpId::ResizeGrad, cpu, DType::F32, kernel_factory<ResizeGradKernel<float>>());
  r.add(OpId::ResizeGrad, cpu, DType::F64, kernel_factory<ResizeGradKernel<double>>());
  r.add(OpId::ResizeGrad, cpu, kLowFloats,
        in_fp32(kernel_factory<ResizeGradKernel<float>>(), Fp32Io::of({2, 3}, {})));
}

}  // namespace oat::cpu
