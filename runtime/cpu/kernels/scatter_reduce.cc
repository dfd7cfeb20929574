// ScatterReduce (internal domain): ScatterElements' and ScatterND's reductions mul, max and min
// (runtime/composite/indexing.cc expands both ops onto it).
//
//   ScatterReduce(data, indices, updates) -> Y      attrs axis (default 0), reduction
//     indices and updates share one shape, of data's rank, no larger than data off `axis`;
//     Y = data;  for every position p of updates, in row-major order:
//       Y[p with idx[p] on axis] = f(Y[..], updates[p])
//     mul: f(y, u) = y·u
//     max: f(y, u) = (u > y or u is NaN) ? u : y       (NaN propagates, whatever the order)
//     min: f(y, u) = (u < y or u is NaN) ? u : y
// Negative indices count from the end of `axis`; one outside [-n, n) is an error naming it.
// F16/BF16 run in FP32 (in_fp32: one rounding of each result, as the CUDA kernel's FP32
// accumulator); max and min are exact in every type.
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

enum class ScatterOp { Mul, Max, Min };

ScatterOp parse_reduction(const KernelContext& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "");
  if (r == "mul") return ScatterOp::Mul;
  if (r == "max") return ScatterOp::Max;
  if (r == "min") return ScatterOp::Min;
  ctx.fail(cat("reduction '", r, "' must be mul, max or min"));
}

template <class T>
T combine(ScatterOp op, T y, T u) {
  switch (op) {
    case ScatterOp::Mul:
      return y * u;
    case ScatterOp::Max:
      return (u > y || std::isnan(u)) ? u : y;
    default:
      return (u < y || std::isnan(u)) ? u : y;
  }
}

template <class T>
void scatter_reduce(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const ScatterOp op = parse_reduction(ctx);
  const Shape& xs = data.shape();
  const int r = data.rank();
  const int axis = elements_axis(ctx, xs, ind.shape(), ctx.node().attr_int("axis", 0));
  if (upd.shape() != ind.shape())
    ctx.fail(cat("updates ", shape_str(upd.shape()), " must have the shape of the indices ",
                 shape_str(ind.shape())));
  if (upd.dtype() != data.dtype())
    ctx.fail(cat("updates are ", dtype_name(upd.dtype()), ", data is ", dtype_name(data.dtype())));
  const std::vector<int64_t> idx = wrapped_indices(ctx, ind, xs[axis], xs, axis);
  Tensor& y = ctx.allocate_output(0, data.dtype(), xs);
  if (data.nbytes()) std::memcpy(y.raw_data(), data.raw_data(), data.nbytes());
  const Shape& is = ind.shape();
  const std::vector<int64_t> xst = contiguous_strides(xs);
  const T* u = upd.data<T>();
  T* out = y.data<T>();
  // Sequential: updates that meet in one element combine in row-major order (mul's rounding).
  std::vector<int64_t> c(static_cast<size_t>(r), 0);
  for (int64_t p = 0; p < upd.numel(); ++p) {
    int64_t off = 0;
    for (int d = 0; d < r; ++d) off += (d == axis ? idx[static_cast<size_t>(p)] : c[d]) * xst[d];
    out[off] = combine(op, out[off], u[p]);
    for (int d = r - 1; d >= 0 && ++c[d] == is[d]; --d) c[d] = 0;
  }
}

}  // namespace

void register_scatter_reduce(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::ScatterReduce, cpu, DType::F32, function_kernel(scatter_reduce<float>));
  r.add(OpId::ScatterReduce, cpu, kLowFloats, in_fp32(function_kernel(scatter_reduce<float>)));
  r.add(OpId::ScatterReduce, cpu, DType::F64, function_kernel(scatter_reduce<double>));
}

}  // namespace oat::cpu
