// Comparison and logic, with numpy broadcasting; comparisons output bool:
//   Equal a == b    Less a < b    Greater a > b    LessOrEqual a <= b    GreaterOrEqual a >= b
//   Not ¬x    And a ∧ b    Or a ∨ b    Xor a ⊕ b                         (bool in, bool out)
//   Where y = cond ? x : y'   (cond bool; x, y' one dtype T; all three broadcast together; the
//                             registry keys Where by x's dtype)
#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

struct EqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct LessOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct GreaterOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessOrEqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOrEqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct NotOp {
  bool operator()(bool a) const { return !a; }
};

template <class T>
void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::Bool)
    ctx.fail(cat("condition must be bool, got ", dtype_name(c.dtype())));
  require_same_dtype(ctx, x.dtype(), 1, 3);
  const Shape out = broadcast_or_fail(ctx, {c.shape(), x.shape(), y.shape()});
  Tensor& z = ctx.allocate_output(0, x.dtype(), out);
  broadcast_ternary(c.data<bool>(), c.shape(), x.data<T>(), x.shape(), y.data<T>(), y.shape(),
                    z.data<T>(), out, [](bool k, T a, T b) { return k ? a : b; });
}

template <class... Ts>
void add_where(KernelRegistry& r) {
  (r.add(OpId::Where, Device::CPU, dtype_of<Ts>(), function_kernel(&where_kernel<Ts>)), ...);
}

}  // namespace

void register_compare(KernelRegistry& r) {
  using H = Eigen::half;
  using BF = Eigen::bfloat16;
  add_binary<EqualOp, true, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t, bool>(
      r, OpId::Equal);
  add_binary<LessOp, true, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Less);
  add_binary<GreaterOp, true, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(
      r, OpId::Greater);
  add_binary<LessOrEqualOp, true, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(
      r, OpId::LessOrEqual);
  add_binary<GreaterOrEqualOp, true, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(
      r, OpId::GreaterOrEqual);
  add_binary<AndOp, true, bool>(r, OpId::And);
  add_binary<OrOp, true, bool>(r, OpId::Or);
  add_binary<XorOp, true, bool>(r, OpId::Xor);
  r.add(OpId::Not, Device::CPU, DType::Bool, function_kernel(&unary_kernel<bool, bool, NotOp>));
  add_where<float, double, H, BF, int64_t, int32_t, int8_t, uint8_t, bool>(r);
}

}  // namespace oat::cpu
