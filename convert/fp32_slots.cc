// Which inputs and outputs of a low-precision node keep FP32, and which read any float type.
//
// The F16/BF16 kernels (runtime/cpu/kernels, runtime/cuda/kernels) are written against exactly
// this layout, as PyTorch AMP and ONNX Runtime lay these ops out:
//   BatchNormalization(X, scale, B, mean, var) -> (Y, running_mean, running_var, ...):
//       X, Y low; scale, B, mean, var and every statistics output FP32 (ONNX's T / T1 / T2).
//   BatchNormalizationGrad(dY, X, scale, [mean, var]) -> (dX, dScale, dBias):
//       dY, X, dX low; scale, mean, var, dScale, dBias FP32.
//   LayerNormalization -> (Y, Mean, InvStdDev): Mean and InvStdDev in stash_type (FP32);
//   LayerNormalizationGrad(dY, X, scale, [Mean, InvStdDev]): Mean and InvStdDev FP32.
//   Resize(X, roi, scales, sizes) (Upsample(X, scales)): roi and scales FP32.
//   ResizeGrad(dY, shape(X), roi, scales): roi and scales FP32.
//   Dropout(data, ratio, training_mode), DropoutGrad(dY, mask, ratio, training_mode): ratio FP32.
//   MatMulGrad, GemmGrad, ConvGrad, ConvTransposeGrad with grad_type = 1 (runtime/grad_type.h):
//       dB (MatMulGrad), dB and dC (GemmGrad), dW and dB (ConvGrad, ConvTransposeGrad) FP32, written
//       from the FP32 accumulator (the training graph sets it where they feed FP32 masters).
//   UnscaleAndCheck(inv_scale, G...): inv_scale FP32; the gradients are read in any float type.
//   Shape, Size, Cast: the data input is read in any type (no cast before them).
#include "convert/precision.h"
#include "runtime/grad_type.h"
#include "runtime/ops.h"

namespace oat::convert {

namespace {

bool internal(const Node& n) { return n.domain == kInternalDomain; }
bool onnx(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

}  // namespace

bool input_stays_fp32(const Node& n, size_t i) {
  const std::string& op = n.op_type;
  if (onnx(n)) {
    if (op == "BatchNormalization") return i >= 1;
    if (op == "Resize" || op == "Upsample") return i >= 1;
    if (op == "Dropout") return i == 1;
    return false;
  }
  if (internal(n)) {
    if (op == "BatchNormalizationGrad") return i >= 2;
    if (op == "LayerNormalizationGrad") return i >= 3;
    if (op == "DropoutGrad") return i == 2;
    if (op == "ResizeGrad") return i >= 2;  // roi, scales
    if (op == "UnscaleAndCheck") return i == 0;
  }
  return false;
}

bool output_stays_fp32(const Node& n, size_t k) {
  const std::string& op = n.op_type;
  if (onnx(n)) return (op == "BatchNormalization" || op == "LayerNormalization") && k >= 1;
  if (internal(n))
    return (op == "BatchNormalizationGrad" && k >= 1) ||
           (is_weight_grad_output(n, k) && weight_grads_in_fp32(n));
  return false;
}

bool input_accepts_any_float(const Node& n, size_t i) {
  const std::string& op = n.op_type;
  if (onnx(n)) return (op == "Shape" || op == "Size" || op == "Cast") && i == 0;
  if (internal(n)) return op == "UnscaleAndCheck" && i >= 1;
  return false;
}

}  // namespace oat::convert
