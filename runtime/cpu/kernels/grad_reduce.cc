// Gradient-only reductions (internal domain).
//
// SumToShape(G, shape) -> R: R has `shape`; G has the broadcast of `shape` with something else.
//   R[j] = Σ_{i : i maps to j under broadcasting} G[i]
// i.e. G summed over its leading extra dimensions and over every dimension where `shape` is 1.
// This is the gradient of an operand that numpy broadcasting expanded.
//
// ReduceGrad(dY, shape, [axes]) -> dX  (attrs: axes, keepdims, noop_with_empty_axes, mean)
//   The gradient of ReduceSum / ReduceMean: dY broadcast back over the reduced axes,
//   dX[i] = dY[reduce(i)]            (sum)
//   dX[i] = dY[reduce(i)] / count    (mean, count = Π reduced dims)
//
// ReduceXYGrad(dY, X, Y, [axes]) -> dX  (attrs: reduce = the forward op, axes, keepdims,
//   noop_with_empty_axes). The reductions whose derivative needs X and Y; with
//   g = dY[reduce(i)] and y = Y[reduce(i)]:
//   ReduceMax, ReduceMin:  dX[i] = g·[X[i] = y] / #ties   (ties share g, as torch.amax)
//   ReduceProd:            dX[i] = g·Π_{k≠i} X[k]        (= g·y / X[i] without zeros; with one
//                          zero only that element gets g·Π(nonzero), with two or more all get 0)
//   ReduceSumSquare:       dX[i] = 2·g·X[i]
//   ReduceL1:              dX[i] = g·sign(X[i])
//   ReduceL2:              dX[i] = g·X[i] / y            (0 where y = 0)
//   ReduceLogSum:          dX[i] = g·exp(−y)             (= g / Σ X)
//   ReduceLogSumExp:       dX[i] = g·exp(X[i] − y)
#include <cmath>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/reduce_xy.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

template <class T>
void sum_to_shape(KernelContext& ctx) {
  const Tensor& g = ctx.input(0);
  const Shape target = ctx.input(1).to_int_vector();
  if (target == g.shape()) {
    ctx.set_output(0, g);
    return;
  }
  // The target must broadcast to G's shape.
  Shape check;
  try {
    check = broadcast_shapes({target, g.shape()});
  } catch (const Error&) {
    check.clear();
  }
  if (check != g.shape())
    ctx.fail(cat("cannot sum ", shape_str(g.shape()), " to shape ", shape_str(target)));
  Tensor& r = ctx.allocate_output(0, g.dtype(), target);
  T* out = r.data<T>();
  const T* in = g.data<T>();
  std::fill(out, out + r.numel(), T(0));
  // Accumulate in the element type; the double-precision gradient checks run this in F64.
  const auto out_strides = broadcast_strides(target, g.shape());
  const auto in_strides = contiguous_strides(g.shape());
  for_each_broadcast_run(g.shape(), {in_strides, out_strides},
                         [&](const std::vector<int64_t>& off, const std::vector<int64_t>& inner,
                             int64_t n) {
                           const T* src = in + off[0];
                           T* dst = out + off[1];
                           if (inner[1] == 0) {
                             T acc = T(0);
                             for (int64_t k = 0; k < n; ++k) acc += src[k];
                             dst[0] += acc;
                           } else {
                             for (int64_t k = 0; k < n; ++k) dst[k] += src[k];
                           }
                         });
}

template <class T>
void reduce_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = ctx.input(1).to_int_vector();
  const Node& n = ctx.node();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (const Tensor* a = ctx.input_or_null(2)) axes = a->to_int_vector();
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  const bool mean = n.attr_int("mean", 0) != 0;
  if (axes.empty() && noop) {  // the forward op was the identity
    ctx.set_output(0, dy);
    return;
  }
  const AxisReduction red = axis_reduction(ctx, xs, axes);
  const Shape& kept = red.kept;  // dY's shape with keepdims
  const int64_t count = red.count;
  if (numel(kept) != dy.numel())
    ctx.fail(cat("gradient shape ", shape_str(dy.shape()), " does not match the reduction of ",
                 shape_str(xs), (keepdims ? " with" : " without"), " keepdims"));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  const T scale = mean ? T(1) / static_cast<T>(count ? count : 1) : T(1);
  const T* src = dy.data<T>();
  T* dst = dx.data<T>();
  for_each_broadcast_run(xs, {contiguous_strides(xs), broadcast_strides(kept, xs)},
                         [&](const std::vector<int64_t>& off, const std::vector<int64_t>& inner,
                             int64_t len) {
                           for (int64_t k = 0; k < len; ++k)
                             dst[off[0] + k] = src[off[1] + k * inner[1]] * scale;
                         });
}

template <class T>
class ReduceXYGradKernel : public OpKernel {
 public:
  explicit ReduceXYGradKernel(const Node& n)
      : axes_(n.attr_ints("axes")),
        noop_(n.attr_int("noop_with_empty_axes", 0) != 0),
        kind_(parse_xy_reduce(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const Shape& xs = x.shape();
    std::vector<int64_t> axes = axes_;
    if (const Tensor* a = ctx.input_or_null(3)) axes = a->to_int_vector();
    if (axes.empty() && noop_) {  // the forward op was the identity
      ctx.set_output(0, dy);
      return;
    }
    const XYReduction red = xy_reduction(ctx, xs, axes, dy, y);
    const Shape& kept = red.kept;  // Y's shape with keepdims
    Tensor& dxt = ctx.allocate_output(0, dy.dtype(), xs);
    if (dxt.numel() == 0) return;
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    const T* gp = dy.data<T>();
    T* dx = dxt.data<T>();

    // Max/Min count the ties of each group, Prod its zeros and the product of the rest (one
    // serial pass: groups of one output element are spread over the whole input).
    std::vector<int64_t> count;
    std::vector<double> nonzero_prod;
    if (kind_ == XYKind::Max || kind_ == XYKind::Min || kind_ == XYKind::Prod) {
      count.assign(static_cast<size_t>(y.numel()), 0);
      if (kind_ == XYKind::Prod) nonzero_prod.assign(count.size(), 1.0);
      const bool prod = kind_ == XYKind::Prod;
      for_each_broadcast_run(xs, {contiguous_strides(xs), broadcast_strides(kept, xs)},
                             [&](const std::vector<int64_t>& off,
                                 const std::vector<int64_t>& inner, int64_t len) {
                               for (int64_t t = 0; t < len; ++t) {
                                 const T v = xp[off[0] + t];
                                 const int64_t k = off[1] + t * inner[1];
                                 if (!prod) {
                                   count[k] += v == yp[k];
                                 } else if (v == T(0)) {
                                   ++count[k];
                                 } else {
                                   nonzero_prod[k] *= static_cast<double>(v);
                                 }
                               }
                             });
    }

    const BroadcastLayout<2> L = broadcast_layout<2>(xs, {xs, kept});
    auto each = [&](auto f) {  // dx[i] = f(x[i], y[k], g[k], k) with k = reduce(i)
      parallel_broadcast_runs(L, [&](int64_t o, const std::array<int64_t, 2>& off,
                                     const std::array<int64_t, 2>& st, int64_t n) {
        for (int64_t t = 0; t < n; ++t) {
          const int64_t k = off[1] + t * st[1];
          dx[o + t] = f(xp[off[0] + t * st[0]], yp[k], gp[k], k);
        }
      });
    };
    switch (kind_) {
      case XYKind::Max:
      case XYKind::Min:
        each([&](T v, T m, T g, int64_t k) {
          return v == m ? g / static_cast<T>(count[k]) : T(0);
        });
        break;
      case XYKind::Prod:
        each([&](T v, T p, T g, int64_t k) {
          if (count[k] == 0) return g * (p / v);
          if (count[k] == 1 && v == T(0)) return g * static_cast<T>(nonzero_prod[k]);
          return T(0);
        });
        break;
      case XYKind::SumSquare: each([](T v, T, T g, int64_t) { return T(2) * g * v; }); break;
      case XYKind::L1:
        each([](T v, T, T g, int64_t) { return v > T(0) ? g : v < T(0) ? -g : T(0); });
        break;
      case XYKind::L2:
        each([](T v, T n, T g, int64_t) { return n == T(0) ? T(0) : g * (v / n); });
        break;
      case XYKind::LogSum: each([](T, T l, T g, int64_t) { return g * std::exp(-l); }); break;
      case XYKind::LogSumExp:
        each([](T v, T l, T g, int64_t) { return g * std::exp(v - l); });
        break;
    }
  }

 private:
  std::vector<int64_t> axes_;
  bool noop_;
  XYKind kind_;
};

}  // namespace

void register_grad_reduce(KernelRegistry& r) {
  r.add(OpId::ReduceXYGrad, Device::CPU, DType::F32, kernel_factory<ReduceXYGradKernel<float>>());
  r.add(OpId::ReduceXYGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<ReduceXYGradKernel<float>>()));
  r.add(OpId::ReduceXYGrad, Device::CPU, DType::F64, kernel_factory<ReduceXYGradKernel<double>>());
  r.add(OpId::SumToShape, Device::CPU, DType::F32, function_kernel(sum_to_shape<float>));
  r.add(OpId::SumToShape, Device::CPU, kLowFloats, in_fp32(function_kernel(sum_to_shape<float>)));
  r.add(OpId::SumToShape, Device::CPU, DType::F64, function_kernel(sum_to_shape<double>));
  r.add(OpId::ReduceGrad, Device::CPU, DType::F32, function_kernel(reduce_grad<float>));
  r.add(OpId::ReduceGrad, Device::CPU, kLowFloats, in_fp32(function_kernel(reduce_grad<float>)));
  r.add(OpId::ReduceGrad, Device::CPU, DType::F64, function_kernel(reduce_grad<double>));
}

}  // namespace oat::cpu
