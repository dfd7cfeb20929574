// CUDA elementwise kernels: binary arithmetic with numpy broadcasting (Add Sub Mul Div Pow, the
// variadic Sum Max Min Mean, PRelu, Mod with fmod = 1), comparisons and logic (bool out), Where, unary
// math and activations, IsNaN IsInf Not, Cast/CastLike. Device code in binary_impl.cu and unary_impl.cu; F32/F16/BF16
// compute in float and round once when stored.
#include <cmath>
#include <limits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/cast_args.h"
#include "runtime/cpu/kernels/gelu_mode.h"
#include "runtime/cpu/kernels/prelu_slope.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

constexpr bool is_compare(BinaryOp op) {
  return op >= BinaryOp::Equal && op <= BinaryOp::GreaterOrEqual;
}

// y = a ⊙ b into a new tensor of the broadcast shape.
Tensor binary_into(KernelContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b, int out) {
  if (a.dtype() != b.dtype())
    ctx.fail(cat("inputs have dtypes ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
  const Shape shape = cpu::broadcast_shapes({a.shape(), b.shape()});
  const DType ot = is_compare(op) ? DType::Bool : a.dtype();
  Tensor y = out >= 0 ? ctx.allocate_output(out, ot, shape) : Tensor(ot, shape, Device::CUDA);
  launch_binary(op, elem_type(a.dtype()), a.raw_data(), b.raw_data(), y.raw_data(), y.numel(),
                make_broadcast_index(shape, {a.shape(), b.shape()}), stream_of(ctx));
  return y;
}

template <BinaryOp Op>
void binary(KernelContext& ctx) {
  binary_into(ctx, Op, ctx.input(0), ctx.input(1), 0);
}

// Pow(X, Y) with an integer exponent Y (opset 12 on: T1 float, T2 any numeric, as TF exports
// x**2): Y is cast to X's type on the device first (integers up to 2^24 are exact in float, and
// the device computes in float anyway), then the float kernel.
void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() == b.dtype() || !is_integer(b.dtype())) {
    binary_into(ctx, BinaryOp::Pow, a, b, 0);
    return;
  }
  Tensor bf(a.dtype(), b.shape(), Device::CUDA);
  launch_cast(elem_type(b.dtype()), elem_type(a.dtype()), b.raw_data(), bf.raw_data(), bf.numel(),
              stream_of(ctx));
  binary_into(ctx, BinaryOp::Pow, a, bf, 0);
}

// PRelu(X, slope): y = X < 0 ? slope·X : X, the slope broadcast unidirectionally to X; before
// opset 7 a 1-D slope of size C is per channel (prelu_slope.h), as the CPU kernel reads it.
void prelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  if (x.dtype() != slope.dtype())
    ctx.fail(cat("X has dtype ", dtype_name(x.dtype()), ", slope ", dtype_name(slope.dtype())));
  const Shape ss = cpu::checked_prelu_slope(ctx, x.shape(), slope.shape(), ctx.node().opset < 7);
  const Shape& out = x.shape();
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  launch_binary(BinaryOp::PRelu, elem_type(x.dtype()), x.raw_data(), slope.raw_data(),
                y.raw_data(), y.numel(), make_broadcast_index(out, {x.shape(), ss}),
                stream_of(ctx));
}

// Sum / Max / Min over 1..n inputs: a left fold of broadcasting binary ops.
template <BinaryOp Op>
void variadic(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  if (n == 1) {
    ctx.set_output(0, ctx.input(0));
    return;
  }
  Tensor acc = ctx.input(0);
  for (int i = 1; i < n; ++i) acc = binary_into(ctx, Op, acc, ctx.input(i), i == n - 1 ? 0 : -1);
}

// Mean over 1..n inputs: the Sum fold, then y = (1/n)·y in place (Scale).
void mean(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  Tensor acc = ctx.input(0);
  for (int i = 1; i < n; ++i) acc = binary_into(ctx, BinaryOp::Add, acc, ctx.input(i), -1);
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x0.dtype(), acc.shape());
  launch_unary(UnaryOp::Scale, elem_type(x0.dtype()), acc.raw_data(), y.raw_data(), y.numel(),
               1.f / static_cast<float>(n), 0.f, stream_of(ctx));
}

// Where(cond, X, Y): cond ? X : Y with all three broadcast.
void where(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::Bool) ctx.fail(cat("condition must be bool, got ", dtype_name(c.dtype())));
  if (x.dtype() != y.dtype())
    ctx.fail(cat("X and Y have dtypes ", dtype_name(x.dtype()), " and ", dtype_name(y.dtype())));
  const Shape shape = cpu::broadcast_shapes({c.shape(), x.shape(), y.shape()});
  Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
  launch_where(elem_type(x.dtype()), c.data<bool>(), x.raw_data(), y.raw_data(), out.raw_data(),
               out.numel(), make_broadcast_index(shape, {c.shape(), x.shape(), y.shape()}),
               stream_of(ctx));
}

// Attribute defaults as ONNX defines them.
struct UnaryParams {
  float alpha = 0.f, beta = 0.f;
};

UnaryParams params_of(UnaryOp op, const KernelContext& ctx) {
  const Node& n = ctx.node();
  switch (op) {
    case UnaryOp::LeakyRelu: return {n.attr_float("alpha", 0.01f), 0.f};
    case UnaryOp::HardSigmoid: return {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
    case UnaryOp::Elu: case UnaryOp::Celu: case UnaryOp::ThresholdedRelu:
      return {n.attr_float("alpha", 1.f), 0.f};
    case UnaryOp::Shrink: return {n.attr_float("lambd", 0.5f), n.attr_float("bias", 0.f)};
    case UnaryOp::Selu:
      return {n.attr_float("alpha", 1.67326319217681884765625f),
              n.attr_float("gamma", 1.05070102214813232421875f)};
    case UnaryOp::Clip: {
      // Bounds: attributes before opset 11, optional scalar inputs 1 and 2 after.
      float lo = -std::numeric_limits<float>::infinity();
      float hi = std::numeric_limits<float>::infinity();
      if (n.opset < 11) {
        lo = n.attr_float("min", lo);
        hi = n.attr_float("max", hi);
      } else {
        if (ctx.has_input(1)) lo = static_cast<float>(host_input(ctx, 1).item_as_double());
        if (ctx.has_input(2)) hi = static_cast<float>(host_input(ctx, 2).item_as_double());
      }
      return {lo, hi};
    }
    default: return {};
  }
}

template <UnaryOp Op>
void unary(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  UnaryOp op = Op;
  if (Op == UnaryOp::Gelu && gelu_uses_tanh(ctx.node()))
    op = UnaryOp::GeluTanh;
  const UnaryParams p = params_of(Op, ctx);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_unary(op, elem_type(x.dtype()), x.raw_data(), y.raw_data(), y.numel(), p.alpha, p.beta,
               stream_of(ctx));
}

void cast_to(KernelContext& ctx, DType to) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() == to) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  launch_cast(elem_type(x.dtype()), elem_type(to), x.raw_data(), y.raw_data(), y.numel(),
              stream_of(ctx));
}

// Mod on floats: ONNX requires fmod = 1 there (C fmod, the result has the dividend's sign).
void mod(KernelContext& ctx) {
  if (ctx.node().attr_int("fmod", 0) != 1)
    ctx.fail("Mod of floating-point inputs needs fmod = 1");
  binary_into(ctx, BinaryOp::Fmod, ctx.input(0), ctx.input(1), 0);
}

template <PredicateOp Op>
void predicate(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
  const Node& n = ctx.node();
  launch_predicate(Op, elem_type(x.dtype()), x.raw_data(), y.data<bool>(), y.numel(),
                   n.attr_int("detect_positive", 1) != 0, n.attr_int("detect_negative", 1) != 0,
                   stream_of(ctx));
}

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(const Node& n) : to_(cpu::cast_target(n)) {}
  void compute(KernelContext& ctx) override { cast_to(ctx, to_); }

 private:
  DType to_;
};

void cast_like(KernelContext& ctx) { cast_to(ctx, ctx.input(1).dtype()); }

}  // namespace

void register_elementwise(KernelRegistry& r) {
  const Device D = Device::CUDA;
  add_floats(r, OpId::Add, function_kernel(binary<BinaryOp::Add>));
  add_floats(r, OpId::Sub, function_kernel(binary<BinaryOp::Sub>));
  add_floats(r, OpId::Mul, function_kernel(binary<BinaryOp::Mul>));
  add_floats(r, OpId::Div, function_kernel(binary<BinaryOp::Div>));
  add_floats(r, OpId::Pow, function_kernel(pow_kernel));
  add_floats(r, OpId::PRelu, function_kernel(prelu));
  add_floats(r, OpId::Mod, function_kernel(mod));
  add_floats(r, OpId::IsNaN, function_kernel(predicate<PredicateOp::IsNaN>));
  add_floats(r, OpId::IsInf, function_kernel(predicate<PredicateOp::IsInf>));
  r.add(OpId::Not, D, DType::Bool, function_kernel(predicate<PredicateOp::Not>));
  add_floats(r, OpId::Sum, function_kernel(variadic<BinaryOp::Add>));
  add_floats(r, OpId::Max, function_kernel(variadic<BinaryOp::Max>));
  add_floats(r, OpId::Min, function_kernel(variadic<BinaryOp::Min>));
  add_floats(r, OpId::Mean, function_kernel(mean));
  add_floats(r, OpId::Equal, function_kernel(binary<BinaryOp::Equal>));
  add_floats(r, OpId::Less, function_kernel(binary<BinaryOp::Less>));
  add_floats(r, OpId::Greater, function_kernel(binary<BinaryOp::Greater>));
  add_floats(r, OpId::LessOrEqual, function_kernel(binary<BinaryOp::LessOrEqual>));
  add_floats(r, OpId::GreaterOrEqual, function_kernel(binary<BinaryOp::GreaterOrEqual>));
  r.add(OpId::And, D, DType::Bool, function_kernel(binary<BinaryOp::And>));
  r.add(OpId::Or, D, DType::Bool, function_kernel(binary<BinaryOp::Or>));
  r.add(OpId::Xor, D, DType::Bool, function_kernel(binary<BinaryOp::Xor>));
  // Where is keyed by X's dtype (kernel_dtype_key); the copy only looks at element sizes.
  r.add(OpId::Where, D, {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32,
                         DType::I8, DType::U8, DType::Bool},
        function_kernel(where));
#define OAT_UNARY(name) add_floats(r, OpId::name, function_kernel(unary<UnaryOp::name>));
  OAT_UNARY(Sqrt) OAT_UNARY(Exp) OAT_UNARY(Log) OAT_UNARY(Neg) OAT_UNARY(Abs)
  OAT_UNARY(Reciprocal) OAT_UNARY(Floor) OAT_UNARY(Ceil) OAT_UNARY(Sign) OAT_UNARY(Round)
  OAT_UNARY(Sin) OAT_UNARY(Cos) OAT_UNARY(Relu) OAT_UNARY(LeakyRelu) OAT_UNARY(Sigmoid)
  OAT_UNARY(HardSigmoid) OAT_UNARY(HardSwish) OAT_UNARY(Tanh) OAT_UNARY(Clip) OAT_UNARY(Erf)
  OAT_UNARY(Gelu) OAT_UNARY(Elu) OAT_UNARY(Selu) OAT_UNARY(Celu) OAT_UNARY(Softplus)
  OAT_UNARY(Softsign) OAT_UNARY(ThresholdedRelu) OAT_UNARY(Mish)
  OAT_UNARY(Tan) OAT_UNARY(Asin) OAT_UNARY(Acos) OAT_UNARY(Atan) OAT_UNARY(Sinh) OAT_UNARY(Cosh)
  OAT_UNARY(Asinh) OAT_UNARY(Acosh) OAT_UNARY(Atanh) OAT_UNARY(Shrink)
#undef OAT_UNARY
  r.add(OpId::Cast, D, kAnyDType, kernel_factory<CastKernel>());
  r.add(OpId::CastLike, D, kAnyDType, function_kernel(cast_like));
}

}  // namespace oat::cuda
