// The `grad_type` attribute of the weight-gradient ops (issue #5; DESIGN.md "Mixed precision":
// "Weight gradients land in FP32").
//
// MatMulGrad, GemmGrad, ConvGrad and ConvTransposeGrad (internal domain) write their weight and
// bias gradients in the operands' dtype by default. With `grad_type` = 1 (TensorProto.FLOAT) they
// write them in FP32 straight from the FP32 accumulator: with F16/BF16 operands the value is the
// FP32 sum of the products of the 16-bit operands, never rounded to 16 bits (no Cast(f16 -> f32)
// after it). The weight/bias outputs are
//   MatMulGrad(dY, A, B) -> (dA, dB):              dB
//   GemmGrad(dY, A, B, [C]) -> (dA, dB, dC):        dB, dC
//   ConvGrad / ConvTransposeGrad(dY, X, W) -> (dX, dW, dB):  dW, dB
// Output 0 (the data gradient, which flows on into low-precision nodes) keeps the operands' dtype.
// FLOAT is the only value: absent means "the operands' dtype"; any other value is refused. F64
// operands with grad_type FLOAT are refused too (the attribute narrows nothing).
//
// The mixed-precision training graph sets it (train/training_graph.cc) on low-precision nodes
// whose weight gradient goes to an FP32 master; convert/ reads it as an FP32 output slot
// (output_stays_fp32) and as the outputs' type (value_types).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/graph.h"

namespace oat {

constexpr const char* kGradTypeAttr = "grad_type";
constexpr int64_t kGradTypeFloat = 1;  // TensorProto.FLOAT

// Whether `n` is one of the four ops above (internal domain).
bool has_weight_grad_outputs(const Node& n);
// Whether output k of `n` is a weight/bias gradient (false for any other op).
bool is_weight_grad_output(const Node& n, size_t k);
// Whether `n` asks for its weight/bias gradients in FP32: false when `grad_type` is absent (or `n`
// is not one of the four ops). Throws Error naming the node for a value other than 1 or a
// non-int attribute.
bool weight_grads_in_fp32(const Node& n);
// Sets grad_type = 1 on one of the four ops (throws Error naming the node for any other op).
void set_weight_grads_fp32(Node& n);

}  // namespace oat
