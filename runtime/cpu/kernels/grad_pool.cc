// Gradients of the pools (pool.cc), internal domain. The windowed ones carry the forward node's
// attributes (kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, count_include_pad);
// window o reads the input at t_j = o·stride - pad_begin + j·dilation along each axis.
//
//   MaxPoolGrad(dY, X) -> dX             dX[argmax_o] += dY[o], argmax_o recomputed from X: the
//                                        first maximum in window order (PyTorch's tie rule);
//                                        padding never wins
//   AveragePoolGrad(dY, shape(X)) -> dX  dX[t] += dY[o] / count_o for every tap t of window o
//                                        inside the input; count_o as the forward divides by
//                                        (count_include_pad: taps inside the padded input)
//   GlobalAveragePoolGrad(dY, shape(X))  dX[n, c, i] = dY[n, c] / (number of positions)
//   GlobalMaxPoolGrad(dY, X) -> dX       dX[n, c, i] = dY[n, c] at the first maximum of the
//                                        plane, 0 elsewhere
// Planes (n, c) are independent and spread over threads.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

namespace {

// The forward input's shape: input 1 is X itself (MaxPool) or its Shape (AveragePool).
Shape x_shape_of(const KernelContext& ctx, bool is_shape) {
  const Tensor& t = ctx.input(1);
  return is_shape ? Shape(t.to_int_vector()) : t.shape();
}

// Checks dY against the pool output of X's shape and allocates dX.
template <class T>
T* pool_grad_output(KernelContext& ctx, const Shape& xs, const Shape& out_spatial) {
  const Tensor& dY = ctx.input(0);
  Shape ys = {xs[0], xs[1]};
  for (int64_t d : out_spatial) ys.push_back(d);
  if (dY.shape() != ys)
    ctx.fail(cat("dY ", shape_str(dY.shape()), " does not match the pool output ", shape_str(ys),
                 " of X ", shape_str(xs)));
  return ctx.allocate_output(0, dY.dtype(), xs).data<T>();
}

Window3 pool_window(const KernelContext& ctx, const WindowAttrs& attrs, const Shape& xs) {
  if (attrs.kernel_shape.empty()) ctx.fail("the kernel_shape attribute is required");
  if (xs.size() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(xs)));
  return forward_window(ctx, attrs, xs, attrs.kernel_shape);
}

// v where `keep`, else +0, by masking v's bits: GCC 12 turns `keep ? v : 0` in the loop below
// into branches, which random data makes unpredictable (2-3x slower).
template <class T>
inline T keep_or_zero(bool keep, T v) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  static_assert(sizeof(Bits) == sizeof(T));
  Bits b;
  std::memcpy(&b, &v, sizeof b);
  b &= Bits(0) - static_cast<Bits>(keep);
  std::memcpy(&v, &b, sizeof b);
  return v;
}

// One row of n windows: rows r0, r1 of X, g the row of dY, d0, d1 the rows of dX. best is what
// the sequential rule ends with (the largest value above -inf; NaN never replaces), and the
// gradient goes to the first position equal to it, or to the first position when nothing rose
// above -inf. Branch free: the masks combine with & and |, not && and ||, and select by bits.
template <class T>
void max_pool_grad_2x2_row(const T* __restrict r0, const T* __restrict r1, const T* __restrict g,
                           T* __restrict d0, T* __restrict d1, int64_t n) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t ox = 0; ox < n; ++ox) {
    const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
    T best = a > ninf ? a : ninf;
    best = b > best ? b : best;
    best = c > best ? c : best;
    best = d > best ? d : best;
    const bool s0 = (a == best) | (best == ninf);
    const bool s1 = !s0 & (b == best);
    const bool s2 = !(s0 | s1) & (c == best);
    const bool s3 = !(s0 | s1 | s2);
    const T gv = g[ox];
    d0[2 * ox] = keep_or_zero(s0, gv);
    d0[2 * ox + 1] = keep_or_zero(s1, gv);
    d1[2 * ox] = keep_or_zero(s2, gv);
    d1[2 * ox + 1] = keep_or_zero(s3, gv);
  }
}

// The 2x2, stride-2 pool without padding or dilation whose windows all lie inside the image
// (LeNet, VGG): each dX element belongs to at most one window, so one pass writes every element
// once, dY at the window's first maximum and 0 at the others (and in rows / columns no window
// reaches), with no separate zeroing and no running-argmax rows. Same rule as the general path:
// only a strictly larger value replaces the maximum, starting from -inf, and a window of NaNs /
// -infs sends its gradient to its first element (Window3::is_plain_2x2).
template <class T>
void max_pool_grad_2x2(const T* x, const T* dy, T* dx, int64_t planes, const Window3& w) {
  const int64_t OH = w.out[1], OW = w.out[2], IH = w.in[1], IW = w.in[2];
#pragma omp parallel for schedule(static) if (planes * IH * IW > 4 * kParallelMinElements)
  for (int64_t nc = 0; nc < planes; ++nc) {
    const T* xp = x + nc * IH * IW;
    const T* dyp = dy + nc * OH * OW;
    T* dxp = dx + nc * IH * IW;
    for (int64_t oy = 0; oy < OH; ++oy) {
      const T* r0 = xp + 2 * oy * IW;
      T* d0 = dxp + 2 * oy * IW;
      max_pool_grad_2x2_row(r0, r0 + IW, dyp + oy * OW, d0, d0 + IW, OW);
      if (2 * OW < IW) {
        std::fill(d0 + 2 * OW, d0 + IW, T(0));
        std::fill(d0 + IW + 2 * OW, d0 + 2 * IW, T(0));
      }
    }
    std::fill(dxp + 2 * OH * IW, dxp + IH * IW, T(0));
  }
}

template <class T>
class MaxPoolGradKernel : public OpKernel {
 public:
  explicit MaxPoolGradKernel(const Node& node) : attrs_(parse_window_attrs(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(1);
    if (X.dtype() != ctx.input(0).dtype())
      ctx.fail(
          cat("dY is ", dtype_name(ctx.input(0).dtype()), " but X is ", dtype_name(X.dtype())));
    const Window3 w = pool_window(ctx, attrs_, X.shape());
    T* dx = pool_grad_output<T>(ctx, X.shape(), w.out_shape());
    const T* dy = ctx.input(0).data<T>();
    const T* x = X.data<T>();
    if (w.is_plain_2x2()) return max_pool_grad_2x2(x, dy, dx, X.dim(0) * X.dim(1), w);
    const std::vector<TapRange> tz = tap_ranges(w, 0), ty = tap_ranges(w, 1);
    const int64_t OH = w.out[1], OW = w.out[2], IH = w.in[1], IW = w.in[2], sx = w.stride[2];
    const int64_t plane = w.in_size(), P = w.out_size(), planes = X.dim(0) * X.dim(1);
    if (plane > std::numeric_limits<int32_t>::max())
      ctx.fail(cat("planes of more than 2^31 elements are not supported (X ", shape_str(X.shape()),
                   ")"));
    std::vector<int64_t> xlo(w.k[2]), xhi(w.k[2]);
    for (int64_t e = 0; e < w.k[2]; ++e)
      valid_range(e * w.dil[2] - w.pad[2], sx, IW, OW, &xlo[e], &xhi[e]);
      // One output row at a time, tap by tap as the forward pools: best[ox] / at[ox] hold the
      // running maximum of window ox and its index in the plane; taps come in window order and only
      // a strictly larger value replaces the maximum, so ties keep the first.
#pragma omp parallel for schedule(static) if (planes * P * w.k_size() > (1 << 15))
    for (int64_t nc = 0; nc < planes; ++nc) {
      const T* xp = x + nc * plane;
      T* dxp = dx + nc * plane;
      std::fill(dxp, dxp + plane, T(0));
      std::vector<T> best(static_cast<size_t>(OW));
      std::vector<int32_t> at(static_cast<size_t>(OW));
      for (int64_t oz = 0; oz < w.out[0]; ++oz)
        for (int64_t oy = 0; oy < OH; ++oy) {
          std::fill(best.begin(), best.end(), -std::numeric_limits<T>::infinity());
          std::fill(at.begin(), at.end(), -1);
          for (int64_t a = tz[oz].lo; a < tz[oz].hi; ++a)
            for (int64_t b = ty[oy].lo; b < ty[oy].hi; ++b) {
              const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
              const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
              for (int64_t e = 0; e < w.k[2]; ++e) {
                // Window ox reads index off + ox·sx. Branch-free (a bit mask, not `?:`, which
                // GCC turns into a branch here): with real data the comparison is unpredictable.
                const int32_t off =
                    static_cast<int32_t>((iz * IH + iy) * IW + e * w.dil[2] - w.pad[2]);
                T* bp = best.data();
                int32_t* ap = at.data();
#pragma omp simd
                for (int64_t ox = xlo[e]; ox < xhi[e]; ++ox) {
                  const int32_t i = off + static_cast<int32_t>(ox * sx);
                  const T v = xp[i];
                  const int32_t take = -static_cast<int32_t>(v > bp[ox]);
                  bp[ox] = v > bp[ox] ? v : bp[ox];
                  ap[ox] = (ap[ox] & ~take) | (i & take);
                }
              }
            }
          // A window whose values are all -inf (or NaN) still has a first element, as in
          // MaxPool's Indices.
          for (int64_t ox = 0; ox < OW; ++ox) {
            if (at[ox] >= 0 || tz[oz].lo >= tz[oz].hi || ty[oy].lo >= ty[oy].hi) continue;
            for (int64_t e = 0; e < w.k[2] && at[ox] < 0; ++e)
              if (ox >= xlo[e] && ox < xhi[e])
                at[ox] = static_cast<int32_t>(
                    ((oz * w.stride[0] - w.pad[0] + tz[oz].lo * w.dil[0]) * IH + oy * w.stride[1] -
                     w.pad[1] + ty[oy].lo * w.dil[1]) *
                        IW +
                    ox * sx + e * w.dil[2] - w.pad[2]);
          }
          const T* dyr = dy + nc * P + (oz * OH + oy) * OW;
          for (int64_t ox = 0; ox < OW; ++ox)
            if (at[ox] >= 0) dxp[at[ox]] += dyr[ox];
        }
    }
  }

 private:
  WindowAttrs attrs_;
};

template <class T>
class AveragePoolGradKernel : public OpKernel {
 public:
  explicit AveragePoolGradKernel(const Node& node)
      : attrs_(parse_window_attrs(node)),
        count_include_pad_(node.attr_int("count_include_pad", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Shape xs = x_shape_of(ctx, true);
    const Window3 w = pool_window(ctx, attrs_, xs);
    T* dx = pool_grad_output<T>(ctx, xs, w.out_shape());
    const T* dy = ctx.input(0).data<T>();
    const std::vector<TapRange> tz = tap_ranges(w, 0), ty = tap_ranges(w, 1), tx = tap_ranges(w, 2);
    const int64_t OH = w.out[1], OW = w.out[2], IH = w.in[1], IW = w.in[2], sx = w.stride[2];
    std::vector<int64_t> xlo(w.k[2]), xhi(w.k[2]);
    for (int64_t e = 0; e < w.k[2]; ++e)
      valid_range(e * w.dil[2] - w.pad[2], sx, IW, OW, &xlo[e], &xhi[e]);
    const int64_t plane = w.in_size(), P = w.out_size(), planes = xs[0] * xs[1];
#pragma omp parallel for schedule(static) if (planes * P * w.k_size() > (1 << 15))
    for (int64_t nc = 0; nc < planes; ++nc) {
      T* dxp = dx + nc * plane;
      std::fill(dxp, dxp + plane, T(0));
      std::vector<T> g(static_cast<size_t>(OW));  // dY[o] / count_o along one output row
      for (int64_t oz = 0; oz < w.out[0]; ++oz)
        for (int64_t oy = 0; oy < OH; ++oy) {
          const T* dyr = dy + nc * P + (oz * OH + oy) * OW;
          const TapRange &rz = tz[oz], &ry = ty[oy];
          for (int64_t ox = 0; ox < OW; ++ox) {
            const int64_t count = count_include_pad_
                                      ? rz.padded * ry.padded * tx[ox].padded
                                      : (rz.hi - rz.lo) * (ry.hi - ry.lo) * (tx[ox].hi - tx[ox].lo);
            g[ox] = count > 0 ? dyr[ox] / static_cast<T>(count) : T(0);
          }
          for (int64_t a = rz.lo; a < rz.hi; ++a)
            for (int64_t b = ry.lo; b < ry.hi; ++b) {
              const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
              const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
              const int64_t row = (iz * IH + iy) * IW - w.pad[2];
              for (int64_t e = 0; e < w.k[2]; ++e) {
                const int64_t off = row + e * w.dil[2];  // dxp[off + ox·sx], ox in [xlo, xhi)
                for (int64_t ox = xlo[e]; ox < xhi[e]; ++ox) dxp[off + ox * sx] += g[ox];
              }
            }
        }
    }
  }

 private:
  WindowAttrs attrs_;
  bool count_include_pad_;
};

// GlobalAveragePoolGrad (kMax = false) and GlobalMaxPoolGrad (kMax = true).
template <class T, bool kMax>
void global_pool_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Shape xs = x_shape_of(ctx, !kMax);
  if (kMax && ctx.input(1).dtype() != dY.dtype())
    ctx.fail(cat("dY is ", dtype_name(dY.dtype()), " but X is ", dtype_name(ctx.input(1).dtype())));
  if (xs.size() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(xs)));
  T* dx = pool_grad_output<T>(ctx, xs, Shape(xs.size() - 2, 1));
  const int64_t planes = xs[0] * xs[1], plane = numel(xs) / std::max<int64_t>(planes, 1);
  const T* dy = dY.data<T>();
  const T* x = kMax ? ctx.input(1).data<T>() : nullptr;
#pragma omp parallel for schedule(static) if (planes * plane > (1 << 16))
  for (int64_t nc = 0; nc < planes; ++nc) {
    T* dxp = dx + nc * plane;
    if constexpr (kMax) {
      std::fill(dxp, dxp + plane, T(0));
      const T* xp = x + nc * plane;
      if (plane > 0) dxp[std::max_element(xp, xp + plane) - xp] = dy[nc];  // first maximum
    } else {
      std::fill(dxp, dxp + plane, dy[nc] / static_cast<T>(plane));
    }
  }
}

}  // namespace

void register_grad_pool(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::MaxPoolGrad, cpu, DType::F32, kernel_factory<MaxPoolGradKernel<float>>());
  r.add(OpId::MaxPoolGrad, cpu, kLowFloats, in_fp32(kernel_factory<MaxPoolGradKernel<float>>()));
  r.add(OpId::MaxPoolGrad, cpu, DType::F64, kernel_factory<MaxPoolGradKernel<double>>());
  r.add(OpId::AveragePoolGrad, cpu, DType::F32, kernel_factory<AveragePoolGradKernel<float>>());
  r.add(OpId::AveragePoolGrad, cpu, kLowFloats,
        in_fp32(kernel_factory<AveragePoolGradKernel<float>>()));
  r.add(OpId::AveragePoolGrad, cpu, DType::F64, kernel_factory<AveragePoolGradKernel<double>>());
  r.add(OpId::GlobalAveragePoolGrad, cpu, DType::F32,
        function_kernel(global_pool_grad<float, false>));
  r.add(OpId::GlobalAveragePoolGrad, cpu, kLowFloats,
        in_fp32(function_kernel(global_pool_grad<float, false>)));
  r.add(OpId::GlobalAveragePoolGrad, cpu, DType::F64,
        function_kernel(global_pool_grad<double, false>));
  r.add(OpId::GlobalMaxPoolGrad, cpu, DType::F32, function_kernel(global_pool_grad<float, true>));
  r.add(OpId::GlobalMaxPoolGrad, cpu, kLowFloats,
        in_fp32(function_kernel(global_pool_grad<float, true>)));
  r.add(OpId::GlobalMaxPoolGrad, cpu, DType::F64, function_kernel(global_pool_grad<double, true>));
}

}  // namespace oat::cpu
