// Pooling on NCHW data (1-, 2-, 3-D): MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool.
//
// For an output position o, the window reads the input at t_j = o·stride - pad_begin + j·dilation,
// j in [0, k), along each axis (conv_geometry.h gives the output size, ceil_mode and auto_pad):
//   MaxPool:      Y[o] = max over the taps inside the input (padding never wins);
//                 Indices[o] = the flat index of that maximum in X, over (N, C, spatial) with the
//                 spatial part row-major (storage_order 0) or column-major (storage_order 1).
//   AveragePool:  Y[o] = Σ taps inside the input / count, where count is the number of taps inside
//                 the input, or with count_include_pad the number inside the padded input
//                 [-pad_begin, in + pad_end) — windows that ceil_mode lets run past the end
//                 padding are not charged for the part beyond it (PyTorch's rule).
//   Global*Pool:  Y[n, c, 1, ...] = max / mean of the whole plane X[n, c].
// Planes (n, c) are independent and spread over threads.
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 reductions; it must be
// silenced before the first include pulls in immintrin.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

void register_space_depth(KernelRegistry& r);  // space_depth.cc
void register_resize(KernelRegistry& r);       // resize.cc: Resize Upsample ResizeGrad

namespace {

// Reads the attributes every pool shares and resolves the window for input X.
Window3 pool_window(const KernelContext& ctx, const WindowAttrs& attrs, const Tensor& X) {
  if (attrs.kernel_shape.empty()) ctx.fail("the kernel_shape attribute is required");
  if (X.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(X.shape())));
  return forward_window(ctx, attrs, X.shape(), attrs.kernel_shape);
}

Shape pooled_shape(const Tensor& X, const Window3& w) {
  Shape s = {X.dim(0), X.dim(1)};
  for (int64_t d : w.out_shape()) s.push_back(d);
  return s;
}

// Max or average pooling of `planes` planes, one output row at a time: for each tap (a, b, e)
// the whole row is updated at once (yr[ox] = max(yr[ox], x[...]) over the ox where the tap is
// inside the input), which vectorises and has no per-element branches.
template <class T, bool kMax>
void pool_rows(const T* x, T* y, int64_t planes, const Window3& w, bool count_include_pad) {
  const std::vector<TapRange> tz = tap_ranges(w, 0), ty = tap_ranges(w, 1), tx = tap_ranges(w, 2);
  const int64_t OH = w.out[1], OW = w.out[2], IH = w.in[1], IW = w.in[2], sx = w.stride[2];
  std::vector<int64_t> xlo(w.k[2]), xhi(w.k[2]);
  for (int64_t e = 0; e < w.k[2]; ++e)
    valid_range(e * w.dil[2] - w.pad[2], sx, IW, OW, &xlo[e], &xhi[e]);
  const int64_t plane = w.in_size(), P = w.out_size();
#pragma omp parallel for schedule(static) if (planes * P * w.k_size() > (1 << 15))
  for (int64_t nc = 0; nc < planes; ++nc) {
    const T* xp = x + nc * plane;
    for (int64_t oz = 0; oz < w.out[0]; ++oz)
      for (int64_t oy = 0; oy < OH; ++oy) {
        T* yr = y + nc * P + (oz * OH + oy) * OW;
        std::fill(yr, yr + OW, kMax ? std::numeric_limits<T>::lowest() : T(0));
        for (int64_t a = tz[oz].lo; a < tz[oz].hi; ++a)
          for (int64_t b = ty[oy].lo; b < ty[oy].hi; ++b) {
            const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
            const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
            for (int64_t e = 0; e < w.k[2]; ++e) {
              const T* xr = xp + (iz * IH + iy) * IW;
              const int64_t off = e * w.dil[2] - w.pad[2];  // xr[ox·sx + off] for ox in range
#pragma omp simd
              for (int64_t ox = xlo[e]; ox < xhi[e]; ++ox) {
                const T v = xr[ox * sx + off];
                if constexpr (kMax)
                  yr[ox] = v > yr[ox] ? v : yr[ox];
                else
                  yr[ox] += v;
              }
            }
          }
        if constexpr (!kMax) {
          const TapRange &rz = tz[oz], &ry = ty[oy];
          for (int64_t ox = 0; ox < OW; ++ox) {
            const int64_t count = count_include_pad
                                      ? rz.padded * ry.padded * tx[ox].padded
                                      : (rz.hi - rz.lo) * (ry.hi - ry.lo) * (tx[ox].hi - tx[ox].lo);
            yr[ox] = count > 0 ? yr[ox] / static_cast<T>(count) : T(0);
          }
        }
      }
  }
}

// MaxPool over plain 2x2 stride-2 windows (Window3::is_plain_2x2), one row of windows at a time,
// with pool_rows' rule (from lowest(), only a larger value replaces: NaN never does) and no
// per-tap passes over the row.
template <class T>
void max_pool_2x2(const T* x, T* y, int64_t planes, const Window3& w) {
  const int64_t OH = w.out[1], OW = w.out[2], IH = w.in[1], IW = w.in[2];
#pragma omp parallel for schedule(static) if (planes * IH * IW > 4 * kParallelMinElements)
  for (int64_t nc = 0; nc < planes; ++nc)
    for (int64_t oy = 0; oy < OH; ++oy) {
      const T* __restrict r0 = x + nc * IH * IW + 2 * oy * IW;
      const T* __restrict r1 = r0 + IW;
      T* __restrict yr = y + (nc * OH + oy) * OW;
      for (int64_t ox = 0; ox < OW; ++ox) {
        T m = std::numeric_limits<T>::lowest();
        for (const T v : {r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]})
          m = v > m ? v : m;
        yr[ox] = m;
      }
    }
}

// MaxPool with the Indices output: the same windows, visited one output at a time.
template <class T>
void max_pool_with_indices(const T* x, T* y, int64_t* indices, int64_t planes, const Window3& w,
                           bool column_major) {
  const std::vector<TapRange> tz = tap_ranges(w, 0), ty = tap_ranges(w, 1), tx = tap_ranges(w, 2);
  const int64_t IH = w.in[1], IW = w.in[2], plane = w.in_size(), P = w.out_size();
#pragma omp parallel for schedule(static) if (planes * P * w.k_size() > (1 << 15))
  for (int64_t nc = 0; nc < planes; ++nc) {
    const T* xp = x + nc * plane;
    int64_t o = nc * P;
    for (int64_t oz = 0; oz < w.out[0]; ++oz)
      for (int64_t oy = 0; oy < w.out[1]; ++oy)
        for (int64_t ox = 0; ox < w.out[2]; ++ox, ++o) {
          T best = std::numeric_limits<T>::lowest();
          int64_t at = -1;
          for (int64_t a = tz[oz].lo; a < tz[oz].hi; ++a) {
            const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
            for (int64_t b = ty[oy].lo; b < ty[oy].hi; ++b) {
              const int64_t row = (iz * IH + oy * w.stride[1] - w.pad[1] + b * w.dil[1]) * IW;
              for (int64_t e = tx[ox].lo; e < tx[ox].hi; ++e) {
                const int64_t i = row + ox * w.stride[2] - w.pad[2] + e * w.dil[2];
                if (at < 0 || xp[i] > best) {
                  best = xp[i];
                  at = i;
                }
              }
            }
          }
          y[o] = best;
          if (at >= 0 && column_major) {  // row-major (z, y, x) -> z + D·(y + H·x)
            const int64_t ix = at % IW, iy = (at / IW) % IH, iz = at / (IW * IH);
            at = iz + w.in[0] * (iy + IH * ix);
          }
          indices[o] = at < 0 ? -1 : nc * plane + at;
        }
  }
}

template <class T>
class MaxPoolKernel : public OpKernel {
 public:
  explicit MaxPoolKernel(const Node& node)
      : attrs_(parse_window_attrs(node)), column_major_(node.attr_int("storage_order", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const Window3 w = pool_window(ctx, attrs_, X);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), pooled_shape(X, w));
    const int64_t planes = X.dim(0) * X.dim(1);
    if (ctx.output_requested(1)) {
      int64_t* indices = ctx.allocate_output(1, DType::I64, Y.shape()).data<int64_t>();
      max_pool_with_indices(X.data<T>(), Y.data<T>(), indices, planes, w, column_major_);
    } else if (w.is_plain_2x2()) {
      max_pool_2x2(X.data<T>(), Y.data<T>(), planes, w);
    } else {
      pool_rows<T, true>(X.data<T>(), Y.data<T>(), planes, w, false);
    }
  }

 private:
  WindowAttrs attrs_;
  bool column_major_;
};

template <class T>
class AveragePoolKernel : public OpKernel {
 public:
  explicit AveragePoolKernel(const Node& node)
      : attrs_(parse_window_attrs(node)),
        count_include_pad_(node.attr_int("count_include_pad", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const Window3 w = pool_window(ctx, attrs_, X);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), pooled_shape(X, w));
    pool_rows<T, false>(X.data<T>(), Y.data<T>(), X.dim(0) * X.dim(1), w, count_include_pad_);
  }

 private:
  WindowAttrs attrs_;
  bool count_include_pad_;
};

// GlobalMaxPool / GlobalAveragePool: one reduction per (n, c) plane.
template <class T, bool kMax>
void global_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(X.shape())));
  Shape y_shape(X.shape().size(), 1);
  y_shape[0] = X.dim(0);
  y_shape[1] = X.dim(1);
  Tensor& Y = ctx.allocate_output(0, X.dtype(), y_shape);
  const int64_t planes = X.dim(0) * X.dim(1), plane = X.numel() / std::max<int64_t>(planes, 1);
  if (planes > 0 && plane == 0) ctx.fail(cat("empty spatial extent in X ", shape_str(X.shape())));
  const T* x = X.data<T>();
  T* y = Y.data<T>();
#pragma omp parallel for schedule(static) if (planes * plane > (1 << 16))
  for (int64_t nc = 0; nc < planes; ++nc) {
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> p(x + nc * plane, plane);
    y[nc] = kMax ? p.maxCoeff() : p.sum() / static_cast<T>(plane);
  }
}

}  // namespace

void register_pool(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::MaxPool, cpu, DType::F32, kernel_factory<MaxPoolKernel<float>>());
  r.add(OpId::MaxPool, cpu, kLowFloats, in_fp32(kernel_factory<MaxPoolKernel<float>>()));
  r.add(OpId::MaxPool, cpu, DType::F64, kernel_factory<MaxPoolKernel<double>>());
  r.add(OpId::MaxPool, cpu, DType::I8, kernel_factory<MaxPoolKernel<int8_t>>());
  r.add(OpId::MaxPool, cpu, DType::U8, kernel_factory<MaxPoolKernel<uint8_t>>());
  r.add(OpId::AveragePool, cpu, DType::F32, kernel_factory<AveragePoolKernel<float>>());
  r.add(OpId::AveragePool, cpu, kLowFloats, in_fp32(kernel_factory<AveragePoolKernel<float>>()));
  r.add(OpId::AveragePool, cpu, DType::F64, kernel_factory<AveragePoolKernel<double>>());
  r.add(OpId::GlobalMaxPool, cpu, DType::F32, function_kernel(global_pool<float, true>));
  r.add(OpId::GlobalMaxPool, cpu, kLowFloats, in_fp32(function_kernel(global_pool<float, true>)));
  r.add(OpId::GlobalMaxPool, cpu, DType::F64, function_kernel(global_pool<double, true>));
  r.add(OpId::GlobalAveragePool, cpu, DType::F32, function_kernel(global_pool<float, false>));
  r.add(OpId::GlobalAveragePool, cpu, kLowFloats,
        in_fp32(function_kernel(global_pool<float, false>)));
  r.add(OpId::GlobalAveragePool, cpu, DType::F64, function_kernel(global_pool<double, false>));
  register_space_depth(r);
  register_resize(r);
}

}  // namespace oat::cpu
