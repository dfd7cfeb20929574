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
#include "runtime/cpu/broadcast.h"
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
  const int rank = static_cast<int>(xs.size());
  const Node& n = ctx.node();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (const Tensor* a = ctx.input_or_null(2)) axes = a->to_int_vector();
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  const bool mean = n.attr_int("mean", 0) != 0;
  std::vector<bool> reduced(rank, false);
  if (axes.empty()) {
    if (noop) {  // the forward op was the identity
      ctx.set_output(0, dy);
      return;
    }
    reduced.assign(rank, true);
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) ctx.fail(cat("axis ", a, " out of range for rank ", rank));
    reduced[a < 0 ? a + rank : a] = true;
  }
  Shape kept(xs);  // dY's shape with keepdims
  int64_t count = 1;
  for (int d = 0; d < rank; ++d)
    if (reduced[d]) {
      count *= xs[d];
      kept[d] = 1;
    }
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

}  // namespace

void register_grad_reduce(KernelRegistry& r) {
  r.add(OpId::SumToShape, Device::CPU, DType::F32, function_kernel(sum_to_shape<float>));
  r.add(OpId::SumToShape, Device::CPU, DType::F64, function_kernel(sum_to_shape<double>));
  r.add(OpId::ReduceGrad, Device::CPU, DType::F32, function_kernel(reduce_grad<float>));
  r.add(OpId::ReduceGrad, Device::CPU, DType::F64, function_kernel(reduce_grad<double>));
}

}  // namespace oat::cpu
