// F16 and BF16 on the CPU: storage is Eigen::half / Eigen::bfloat16, arithmetic is FP32, and every
// output element is rounded once to the storage type (DESIGN.md "Mixed precision: what correct
// means"). Two tools cover every kernel family:
//
//   Rounded<TO, Op>        elementwise ops: each 16-bit operand is widened to float, Op computes in
//                          float, the result is rounded once to TO. The kernels keep running on
//                          16-bit storage (no tensor copies): y = TO(op(float(a), float(b))).
//                          For F32/F64/integer operands it is Op itself.
//   in_fp32(factory, io)   everything that accumulates (GEMM, convolution, reductions, softmax,
//                          normalisations, losses, pooling, scatter-add gradients): the FP32
//                          kernel runs on float copies of the F16/BF16 inputs, and each float
//                          output is rounded once. Products and sums therefore accumulate in FP32
//                          exactly as in the FP32 kernel (what cuBLAS/cuDNN do with FP16 operands
//                          and FP32 compute); the copies are the "emulation cost".
//
// Fp32Io lists the inputs and outputs of a low-precision node that stay FP32 (BatchNormalization:
// scale, B, mean, var and the running statistics; the weight-gradient ops' dW/dB with grad_type
// FLOAT; convert/precision.h input_stays_fp32 / output_stays_fp32 follow the same rule). Such inputs may arrive as FP32 or in the storage type; any other float input must be
// in the storage type.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/kernel.h"

namespace oat::cpu {

template <class T>
constexpr bool kIsLowFloat = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

// float for F16/BF16 values, the value itself otherwise.
template <class T>
auto widen(T v) {
  if constexpr (kIsLowFloat<T>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

// y = TO(op(widen(args)...)): one rounding to TO at the end.
template <class TO, class Op>
struct Rounded {
  Op op;
  template <class... A>
  TO operator()(A... a) const {
    return static_cast<TO>(op(widen(a)...));
  }
};
template <class TO, class Op>
Rounded<TO, Op> rounded(const Op& op) {
  return Rounded<TO, Op>{op};
}

// The two low-precision storage types, for registrations.
inline constexpr std::initializer_list<DType> kLowFloats = {DType::F16, DType::BF16};

// Bit masks of input / output indices that stay FP32 in a low-precision node.
struct Fp32Io {
  uint32_t inputs = 0;
  uint32_t outputs = 0;
  static Fp32Io of(std::initializer_list<int> ins, std::initializer_list<int> outs) {
    Fp32Io io;
    for (int i : ins) io.inputs |= 1u << i;
    for (int o : outs) io.outputs |= 1u << o;
    return io;
  }
  bool input(int i) const { return i < 32 && ((inputs >> i) & 1u); }
  bool output(int o) const { return o < 32 && ((outputs >> o) & 1u); }
};

// Float32 copy of a F16/BF16 tensor, and a F16/BF16 copy (rounded once) of a F32 tensor;
// vectorised and split over threads for large tensors.
Tensor widen_tensor(const Tensor& t);
Tensor round_tensor(const Tensor& t, DType low);

// Wraps the FP32 kernel `f32` of an op into its F16/BF16 kernel (see the top of the file). Register
// the result under both kLowFloats; the storage type is read from the inputs at run time.
KernelFactory in_fp32(KernelFactory f32, Fp32Io io = {});
// The same with the FP32 outputs chosen per node when the kernel is made: the weight-gradient ops
// (MatMulGrad, GemmGrad, ConvGrad, ConvTransposeGrad) pass weight_grad_io, so that with
// grad_type = FLOAT (runtime/grad_type.h) their dW/dB outputs are the FP32 kernel's accumulation
// itself, not rounded to the storage type.
KernelFactory in_fp32(KernelFactory f32, Fp32Io (*io_of)(const Node&));
// The weight/bias outputs of a weight-gradient op whose grad_type asks for FP32; none otherwise.
Fp32Io weight_grad_io(const Node& n);
// The plain (F32/F64) kernels of the weight-gradient ops: grad_type FLOAT is what the float
// kernel writes anyway (and, inside in_fp32, what keeps dW/dB unrounded); float64 operands cannot
// be asked for float32 gradients. Throws Error naming the node (also for a bad grad_type value).
void check_weight_grad_type(const Node& n, DType operands);

}  // namespace oat::cpu
