// What the .cc half of a CUDA kernel hands its _impl.cu half: plain types only (no Eigen, no
// Tensor), so nvcc compiles nothing but device code and its launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace oat::cuda {

// Same order as oat::DType (static_assert in register.cc).
enum class ElemType : int { F32, F16, BF16, F64, I64, I32, I8, U8, Bool };

constexpr int kMaxRank = 8;

// Up to three operands indexed over one output shape: element i of the output reads operand k at
// Σ_d idx_d · strides[k][d] (stride 0 along a broadcast dimension). Dimensions are collapsed by
// the caller where every operand is contiguous across them.
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
  bool contiguous = false;  // every operand is the full, contiguous output: offset = i
};

constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

}  // namespace oat::cuda
