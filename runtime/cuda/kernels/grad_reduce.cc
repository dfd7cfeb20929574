// Gradient reductions on CUDA (internal domain), as runtime/cpu/kernels/grad_reduce.cc:
//   SumToShape(G, shape) -> R: G summed over its extra leading dims and wherever `shape` is 1
//     (the gradient of a broadcast operand), through the FP32-accumulating Sum reduction.
//   ReduceGrad(dY, shape, [axes]) -> dX: dY broadcast back over the reduced axes, divided by the
//     reduced count when attr mean = 1 (ReduceMean), one rounding.
//   ReduceXYGrad(dY, X, Y, [axes]) -> dX (attrs reduce = the forward op, axes, keepdims,
//     noop_with_empty_axes): the reductions whose dX needs X and Y (Max Min Prod SumSquare L1 L2
//     LogSum LogSumExp; ties of Max/Min share g, Prod's zeros as the CPU kernel), per-output tie
//     and zero counts in FP32 first where needed (reduce_impl.cu).
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/reduce_xy.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

// cpu::XYKind (the attribute's parse) and the device's XYGrad list the reductions in one order.
#define OAT_SAME_XY(k) static_cast<int>(cpu::XYKind::k) == static_cast<int>(XYGrad::k)
static_assert(OAT_SAME_XY(Max) && OAT_SAME_XY(Min) && OAT_SAME_XY(Prod) && OAT_SAME_XY(SumSquare) &&
              OAT_SAME_XY(L1) && OAT_SAME_XY(L2) && OAT_SAME_XY(LogSum) && OAT_SAME_XY(LogSumExp));
#undef OAT_SAME_XY

void sum_to_shape_into(const KernelContext& ctx, const Tensor& g, Tensor& out) {
  const Shape& target = out.shape();
  const int r = g.rank(), tr = static_cast<int>(target.size());
  bool ok = tr <= r;
  for (int d = 0; ok && d < tr; ++d) {
    const int64_t td = target[tr - 1 - d], gd = g.shape()[r - 1 - d];
    ok = td == gd || td == 1;
  }
  if (!ok)
    ctx.fail(cat("cannot sum ", shape_str(g.shape()), " to ", shape_str(target),
                 ": the target does not broadcast to it"));
  if (out.dtype() != g.dtype() &&
      !(out.dtype() == DType::F32 && (g.dtype() == DType::F16 || g.dtype() == DType::BF16)))
    ctx.fail(cat("cannot sum ", dtype_name(g.dtype()), " into ", dtype_name(out.dtype())));
  const auto strides = cpu::contiguous_strides(g.shape());
  ReducePlan p;
  p.outputs = 1;
  p.count = 1;
  for (int d = 0; d < r; ++d) {
    const int64_t gd = g.shape()[d];
    const int td = d - (r - tr);
    const bool reduced = td < 0 || target[td] == 1;
    if (gd == 1) continue;
    int& rank = reduced ? p.red_rank : p.kept_rank;
    if (rank == kMaxRank) ctx.fail(cat("rank ", r, " is above the CUDA kernels' ", kMaxRank));
    (reduced ? p.red_dims : p.kept_dims)[rank] = gd;
    (reduced ? p.red_strides : p.kept_strides)[rank] = strides[d];
    ++rank;
    (reduced ? p.count : p.outputs) *= gd;
  }
  launch_reduce(ReduceOp::Sum, elem_type(g.dtype()), elem_type(out.dtype()), g.raw_data(),
                out.raw_data(), p, stream_of(ctx));
}

namespace {

void sum_to_shape(KernelContext& ctx) {
  const Tensor& g = ctx.input(0);
  const Shape target = host_input(ctx, 1).to_int_vector();
  if (g.shape() == target) {
    ctx.set_output(0, g);
    return;
  }
  Tensor& out = ctx.allocate_output(0, g.dtype(), target);
  sum_to_shape_into(ctx, g, out);
}

void reduce_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = host_input(ctx, 1).to_int_vector();
  const Node& n = ctx.node();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (ctx.has_input(2)) axes = host_input(ctx, 2).to_int_vector();
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.set_output(0, dy);
    return;
  }
  const cpu::AxisReduction red = cpu::axis_reduction(ctx, xs, axes);
  const Shape& kept = red.kept;
  const int64_t count = red.count;
  if (numel(kept) != dy.numel())
    ctx.fail(cat("gradient shape ", shape_str(dy.shape()), " does not match the reduction of ",
                 shape_str(xs)));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  const cudaStream_t s = stream_of(ctx);
  launch_broadcast_copy(static_cast<int>(dtype_size(dy.dtype())), dy.raw_data(), dx.raw_data(),
                        dx.numel(), make_broadcast_index(xs, {kept}), s);
  if (n.attr_int("mean", 0) != 0)
    launch_unary(UnaryOp::Scale, elem_type(dx.dtype()), dx.raw_data(), dx.raw_data(), dx.numel(),
                 1.f / static_cast<float>(count ? count : 1), 0.f, s);
}

class ReduceXYGradKernel : public OpKernel {
 public:
  explicit ReduceXYGradKernel(const Node& n)
      : axes_(n.attr_ints("axes")),
        noop_(n.attr_int("noop_with_empty_axes", 0) != 0),
        kind_(static_cast<XYGrad>(static_cast<int>(cpu::parse_xy_reduce(n)))) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    const Shape& xs = x.shape();
    std::vector<int64_t> axes = axes_;
    if (ctx.has_input(3)) axes = host_input(ctx, 3).to_int_vector();
    if (axes.empty() && noop_) {  // the forward op was the identity
      ctx.set_output(0, dy);
      return;
    }
    if (x.dtype() != dy.dtype() || y.dtype() != dy.dtype())
      ctx.fail(cat("dY, X and Y must have one dtype, got ", dtype_name(dy.dtype()), ", ",
                   dtype_name(x.dtype()), ", ", dtype_name(y.dtype())));
    const cpu::XYReduction red = cpu::xy_reduction(ctx, xs, axes, dy, y);
    const std::vector<bool>& reduced = red.reduced;
    const Shape& kept = red.kept;  // Y's shape with keepdims
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    if (dx.numel() == 0) return;
    const cudaStream_t s = stream_of(ctx);
    Tensor stats;  // count, then nonzero_prod, one float each per output
    const float* count = nullptr;
    const float* nonzero_prod = nullptr;
    if (kind_ == XYGrad::Max || kind_ == XYGrad::Min || kind_ == XYGrad::Prod) {
      const ReducePlan plan = make_reduce_plan(ctx, xs, reduced);
      stats = Tensor(DType::F32, {2 * plan.outputs}, Device::CUDA);
      float* st = stats.data<float>();
      launch_reduce_xy_stats(kind_, elem_type(x.dtype()), x.raw_data(), y.raw_data(), st,
                             st + plan.outputs, plan, s);
      count = st;
      nonzero_prod = st + plan.outputs;
    }
    launch_reduce_xy_grad(kind_, elem_type(dy.dtype()), dy.raw_data(), x.raw_data(), y.raw_data(),
                          count, nonzero_prod, dx.raw_data(), dx.numel(),
                          make_broadcast_index(xs, {kept}), s);
  }

 private:
  std::vector<int64_t> axes_;
  bool noop_;
  XYGrad kind_;
};

}  // namespace

void register_grad_reduce(KernelRegistry& r) {
  add_floats(r, OpId::SumToShape, function_kernel(sum_to_shape));
  add_floats(r, OpId::ReduceGrad, function_kernel(reduce_grad));
  add_floats(r, OpId::ReduceXYGrad, kernel_factory<ReduceXYGradKernel>());
}

}  // namespace oat::cuda
