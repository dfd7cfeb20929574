// Trigonometric and hyperbolic functions and their inverses, y has x's shape (Sin and Cos, with
// Eigen's packet math, are in unary.cc):
//   Tan   tan x                   Sinh  sinh x                  (ONNX opset 7 / 9)
//   Asin  arcsin x, |x| ≤ 1       Cosh  cosh x
//   Acos  arccos x, |x| ≤ 1       Asinh arsinh x
//   Atan  arctan x                Acosh arcosh x, x ≥ 1
//                                 Atanh artanh x, |x| < 1 (±1 → ±inf)
// Outside the domain the C library's result (NaN) is kept, as numpy's. F32/F64 use the C
// library in their own precision; F16/BF16 compute in float and round each element once
// (low_precision.h).
#include <cmath>

#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

#define OAT_TRIG_OP(Name, fn)            \
  struct Name##Op {                      \
    template <class T>                   \
    T operator()(T x) const {            \
      return static_cast<T>(std::fn(x)); \
    }                                    \
  };
OAT_TRIG_OP(Tan, tan)
OAT_TRIG_OP(Asin, asin)
OAT_TRIG_OP(Acos, acos)
OAT_TRIG_OP(Atan, atan)
OAT_TRIG_OP(Sinh, sinh)
OAT_TRIG_OP(Cosh, cosh)
OAT_TRIG_OP(Asinh, asinh)
OAT_TRIG_OP(Acosh, acosh)
OAT_TRIG_OP(Atanh, atanh)
#undef OAT_TRIG_OP

}  // namespace

void register_trig(KernelRegistry& r) {
  using H = Eigen::half;
  using BF = Eigen::bfloat16;
  add_unary<TanOp, float, double, H, BF>(r, OpId::Tan);
  add_unary<AsinOp, float, double, H, BF>(r, OpId::Asin);
  add_unary<AcosOp, float, double, H, BF>(r, OpId::Acos);
  add_unary<AtanOp, float, double, H, BF>(r, OpId::Atan);
  add_unary<SinhOp, float, double, H, BF>(r, OpId::Sinh);
  add_unary<CoshOp, float, double, H, BF>(r, OpId::Cosh);
  add_unary<AsinhOp, float, double, H, BF>(r, OpId::Asinh);
  add_unary<AcoshOp, float, double, H, BF>(r, OpId::Acosh);
  add_unary<AtanhOp, float, double, H, BF>(r, OpId::Atanh);
}

}  // namespace oat::cpu
