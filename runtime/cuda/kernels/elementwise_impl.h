// Launchers of the elementwise CUDA kernels (binary_impl.cu, unary_impl.cu). Arithmetic runs in
// float for F32/F16/BF16 storage (one rounding when the result is stored), as the CPU reference
// emulates low precision.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

enum class BinaryOp : int {
  Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Fmod, // T, T -> T         (F32 F16 BF16)
  Equal, Less, Greater, LessOrEqual, GreaterOrEqual,  // T, T -> bool
  And, Or, Xor                                    // bool, bool -> bool
};
void launch_binary(BinaryOp op, ElemType t, const void* a, const void* b, void* y, int64_t n,
                   const BroadcastIndex& ix, cudaStream_t s);
// out = cond ? x : y (any 1-, 2-, 4- or 8-byte element type).
void launch_where(ElemType t, const bool* cond, const void* x, const void* y, void* out,
                  int64_t n, const BroadcastIndex& ix, cudaStream_t s);
// out[i] = x[offset(i)]: a broadcasting copy (Expand, Gemm's C, Tile through a reshaped view).
void launch_broadcast_copy(int elem_bytes, const void* x, void* out, int64_t n,
                           const BroadcastIndex& ix, cudaStream_t s);

// out[offset(i)] = x[i]: the inverse of a broadcast copy for a one-to-one view (SliceGrad writes
// dY into the sliced positions of a zeroed dX).
void launch_strided_scatter(int elem_bytes, const void* x, void* out, int64_t n,
                            const BroadcastIndex& ix, cudaStream_t s);
// dx = dy ⊙ mask · scale (DropoutGrad), T = F32/F16/BF16.
void launch_masked_scale(ElemType t, const void* dy, const bool* mask, void* dx, int64_t n,
                         float scale, cudaStream_t s);

enum class UnaryOp : int {
  Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil, Sign, Round, Sin, Cos,
  Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Clip, Erf, Gelu, GeluTanh, Elu, Selu,
  Celu, Softplus, Softsign, ThresholdedRelu, Mish,
  Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Shrink,
  Scale  // y = alpha·x (gradients of means and averages)
};
// alpha/beta: the op's attributes (LeakyRelu alpha; HardSigmoid alpha, beta; Clip min, max;
// Selu alpha, gamma; Elu/Celu/ThresholdedRelu alpha; Shrink lambd, bias).
void launch_unary(UnaryOp op, ElemType t, const void* x, void* y, int64_t n, float alpha,
                  float beta, cudaStream_t s);

// Predicates with a bool output: IsNaN(x), IsInf(x) (a: detect +∞, b: detect −∞; T = F32/F16/
// BF16), Not(x) (T = bool).
enum class PredicateOp : int { IsNaN, IsInf, Not };
void launch_predicate(PredicateOp op, ElemType t, const void* x, bool* y, int64_t n, bool a,
                      bool b, cudaStream_t s);

// ONNX Cast between any two element types (float -> int truncates toward zero, NaN -> 0;
// -> bool is x != 0; -> F16/BF16 rounds to nearest even).
void launch_cast(ElemType from, ElemType to, const void* x, void* y, int64_t n, cudaStream_t s);

}  // namespace oat::cuda
