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

// One reduction of `count` terms over several blocks. A reduction that runs as `base` blocks
// (one per output, or per tile of 32 columns) leaves most of a GPU idle when `base` is small
// (a bias gradient: 256 columns summed over 8192 rows is 8 tiles). It is then cut into `splits`
// chunks of `chunk` consecutive terms (at least `min_chunk`), blockIdx.y picking the chunk, until
// about kSplitTargetBlocks blocks exist; the chunks' FP32 partial results go to scratch and a
// second kernel combines them in chunk order. The numbers depend on the shape only, never on the
// device, so a result is the same on every GPU, on the emulator and in a CUDA-graph replay.
constexpr int64_t kSplitTargetBlocks = 1024;
struct ReductionSplit {
  int64_t splits = 1;
  int64_t chunk = 0;  // terms per split; the last split may have fewer
};
inline ReductionSplit split_reduction(int64_t base, int64_t count, int64_t min_chunk) {
  ReductionSplit s{1, count};
  if (base < 1) base = 1;
  if (base >= kSplitTargetBlocks || count < 2 * min_chunk) return s;
  int64_t n = (kSplitTargetBlocks + base - 1) / base;
  if (n > count / min_chunk) n = count / min_chunk;
  if (n > 65535) n = 65535;
  if (n <= 1) return s;
  s.chunk = (count + n - 1) / n;
  s.splits = (count + s.chunk - 1) / s.chunk;  // no empty chunk
  return s;
}

}  // namespace oat::cuda
