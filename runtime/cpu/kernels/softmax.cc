// Softmax, LogSoftmax, Hardmax: numerically stable (the row maximum is subtracted before exp).
//
// Axis semantics by opset: before 13 the input is coerced to 2-D [prod(shape[:axis]),
// prod(shape[axis:])] (default axis 1) and the op runs along the second dimension; from 13 it
// runs along the single dimension `axis` (default -1).
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics of Eigen's
// packet exp/log (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "runtime/cpu/kernels/softmax.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

template <class T>
void softmax_along(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, SoftmaxKind kind) {
  using Arr = Eigen::Array<T, 1, Eigen::Dynamic>;
  using CMap = Eigen::Map<const Arr>;
  using MMap = Eigen::Map<Arr>;
  if (outer == 0 || len == 0 || inner == 0) return;
  const bool big = outer * len * inner > 16384;
  if (inner == 1) {  // contiguous rows
#pragma omp parallel for if (big)
    for (int64_t o = 0; o < outer; ++o) {
      CMap xr(x + o * len, len);
      MMap yr(y + o * len, len);
      if (kind == SoftmaxKind::Hardmax) {
        Eigen::Index k = 0;
        xr.maxCoeff(&k);  // the first maximum
        yr.setZero();
        yr[k] = T(1);
        continue;
      }
      const T m = xr.maxCoeff();  // vectorised; the index variant is not
      if (kind == SoftmaxKind::Softmax) {
        yr = (xr - m).exp();
        yr *= T(1) / yr.sum();
      } else {
        // (x - m) is exact; subtracting m + log(s) as one rounded value would lose digits.
        const T log_s = std::log((xr - m).exp().sum());
        yr = (xr - m) - log_s;
      }
    }
    return;
  }
  // Strided: columns of an [len, inner] block, processed `width` columns at a time.
  const int64_t width = std::min<int64_t>(inner, 1024);
  const int64_t chunks = (inner + width - 1) / width;
#pragma omp parallel for if (big)
  for (int64_t task = 0; task < outer * chunks; ++task) {
    const int64_t o = task / chunks, i0 = (task % chunks) * width;
    const int64_t w = std::min(width, inner - i0);
    const T* xb = x + o * len * inner + i0;
    T* yb = y + o * len * inner + i0;
    Arr m = CMap(xb, w);
    Eigen::Array<int64_t, 1, Eigen::Dynamic> arg =
        Eigen::Array<int64_t, 1, Eigen::Dynamic>::Zero(w);
    for (int64_t l = 1; l < len; ++l) {
      CMap xr(xb + l * inner, w);
      if (kind == SoftmaxKind::Hardmax) {
        for (int64_t i = 0; i < w; ++i)
          if (xr[i] > m[i]) m[i] = xr[i], arg[i] = l;
      } else {
        m = m.max(xr);
      }
    }
    if (kind == SoftmaxKind::Hardmax) {
      for (int64_t l = 0; l < len; ++l)
        for (int64_t i = 0; i < w; ++i) yb[l * inner + i] = arg[i] == l ? T(1) : T(0);
      continue;
    }
    Arr s = Arr::Zero(w);
    for (int64_t l = 0; l < len; ++l) {
      if (kind == SoftmaxKind::Softmax) {
        MMap yr(yb + l * inner, w);
        yr = (CMap(xb + l * inner, w) - m).exp();
        s += yr;
      } else {
        s += (CMap(xb + l * inner, w) - m).exp();
      }
    }
    if (kind == SoftmaxKind::Softmax) {
      const Arr r = s.inverse();
      for (int64_t l = 0; l < len; ++l) MMap(yb + l * inner, w) *= r;
    } else {
      const Arr log_s = s.log();
      for (int64_t l = 0; l < len; ++l)
        MMap(yb + l * inner, w) = (CMap(xb + l * inner, w) - m) - log_s;
    }
  }
}

template void softmax_along<float>(const float*, float*, int64_t, int64_t, int64_t, SoftmaxKind);
template void softmax_along<double>(const double*, double*, int64_t, int64_t, int64_t, SoftmaxKind);

namespace {

struct SoftmaxAttrs {
  int64_t axis;
  bool coerce_2d;  // opset < 13
};

template <class T, SoftmaxKind kKind>
class SoftmaxKernel : public OpKernel {
 public:
  explicit SoftmaxKernel(const Node& n)
      : attrs_{n.attr_int("axis", n.opset < 13 ? 1 : -1), n.opset < 13} {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    const int64_t axis = attrs_.axis < 0 ? attrs_.axis + r : attrs_.axis;
    // Opset < 13 allows axis == rank (an empty trailing 2-D dimension of size 1).
    if (axis < 0 || axis > r || (axis == r && !attrs_.coerce_2d))
      ctx.fail(cat("axis ", attrs_.axis, " is out of range for input ", shape_str(x.shape())));
    const Shape& s = x.shape();
    const int64_t outer = numel(Shape(s.begin(), s.begin() + axis));
    int64_t len, inner;
    if (attrs_.coerce_2d) {
      len = numel(Shape(s.begin() + axis, s.end()));
      inner = 1;
    } else {
      len = s[axis];
      inner = numel(Shape(s.begin() + axis + 1, s.end()));
    }
    Tensor& y = ctx.allocate_output(0, dtype_of<T>(), s);
    softmax_along<T>(x.data<T>(), y.data<T>(), outer, len, inner, kKind);
  }

 private:
  SoftmaxAttrs attrs_;
};

template <SoftmaxKind kKind>
void add_family(KernelRegistry& r, OpId op) {
  r.add(op, Device::CPU, DType::F32, kernel_factory<SoftmaxKernel<float, kKind>>());
  r.add(op, Device::CPU, kLowFloats, in_fp32(kernel_factory<SoftmaxKernel<float, kKind>>()));
  r.add(op, Device::CPU, DType::F64, kernel_factory<SoftmaxKernel<double, kKind>>());
}

}  // namespace

void register_loss(KernelRegistry& r);  // loss.cc

void register_softmax(KernelRegistry& r) {
  add_family<SoftmaxKind::Softmax>(r, OpId::Softmax);
  add_family<SoftmaxKind::LogSoftmax>(r, OpId::LogSoftmax);
  add_family<SoftmaxKind::Hardmax>(r, OpId::Hardmax);
  register_loss(r);
}

}  // namespace oat::cpu
