// GatherGrad on the device, deterministic (as PyTorch's embedding backward on CUDA):
//   dX = 0;  dX[o, k, i] = Σ_{j : idx[j] = k} dY[o, j, i]   (j ascending, FP32 accumulator)
// 1. keys[j] = the wrapped index idx[j] (0xFFFFFFFF when out of range: sorted last, skipped),
//    pos[j] = j;
// 2. CUB's stable radix sort of (keys, pos) as one segment: equal indices keep j ascending;
// 3. one thread per (o, run start p, i) sums its run in order and writes its dX element, which
//    no other thread writes: no atomics, the same sum in the same order as the CPU kernel, so
//    the result is bitwise the CPU's and equal from run to run (graph or eager).
#include <cub/device/device_segmented_radix_sort.cuh>

#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/movement_impl.h"

namespace oat::cuda {

namespace {

constexpr uint32_t kSkip = 0xFFFFFFFFu;

// The scratch layout: keys in/out (uint32), positions in/out (int32), two segment offsets, then
// CUB's temporary storage; each part 256-byte aligned.
struct GatherGradScratch {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, offsets = 0, cub = 0;
  size_t cub_bytes = 0, total = 0;
};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

GatherGradScratch scratch_layout(int64_t count) {
  const int items = static_cast<int>(count);
  GatherGradScratch l;
  const int* no_offsets = nullptr;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
      nullptr, l.cub_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), items, 1, no_offsets,
      no_offsets + 1, 0, 32));
  const size_t words = align256(static_cast<size_t>(items) * 4);
  l.keys_out = l.keys_in + words;
  l.pos_in = l.keys_out + words;
  l.pos_out = l.pos_in + words;
  l.offsets = l.pos_out + words;
  l.cub = l.offsets + align256(2 * 4);
  l.total = l.cub + align256(l.cub_bytes);
  return l;
}

template <class I>
__global__ void gather_grad_keys_kernel(const I* idx, uint32_t* keys, int32_t* pos,
                                        int32_t* offsets, int64_t count, int64_t axis_dim) {
  OAT_GRID_STRIDE_LOOP(j, count) {
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < 0) k += axis_dim;
    keys[j] = (k < 0 || k >= axis_dim) ? kSkip : static_cast<uint32_t>(k);
    pos[j] = static_cast<int32_t>(j);
    if (j == 0) {
      offsets[0] = 0;
      offsets[1] = static_cast<int32_t>(count);
    }
  }
}

template <class T>
__global__ void gather_grad_sum_kernel(const T* dy, const uint32_t* keys, const int32_t* pos,
                                       float* acc, int64_t outer, int64_t axis_dim, int64_t inner,
                                       int64_t count) {
  const int64_t n = outer * count * inner;
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t i = e % inner;
    const int64_t p = (e / inner) % count;
    const int64_t o = e / (inner * count);
    const uint32_t k = keys[p];
    if (k == kSkip || (p > 0 && keys[p - 1] == k)) continue;  // not the start of a run
    float sum = 0.f;
    for (int64_t q = p; q < count && keys[q] == k; ++q)
      sum += to_float(dy[(o * count + pos[q]) * inner + i]);
    acc[(o * axis_dim + k) * inner + i] = sum;
  }
}

}  // namespace

size_t gather_grad_scratch_bytes(int64_t count) { return scratch_layout(count).total; }

void launch_gather_grad(ElemType t, const void* dy, const void* indices, bool indices_i64,
                        float* acc, int64_t outer, int64_t axis_dim, int64_t inner, int64_t count,
                        void* scratch, size_t scratch_bytes, cudaStream_t s) {
  if (count == 0 || outer * inner == 0) return;
  const GatherGradScratch l = scratch_layout(count);
  if (scratch_bytes < l.total) throw std::runtime_error("GatherGrad: scratch too small");
  char* base = static_cast<char*>(scratch);
  auto* keys_in = reinterpret_cast<uint32_t*>(base + l.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(base + l.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(base + l.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(base + l.pos_out);
  auto* offsets = reinterpret_cast<int32_t*>(base + l.offsets);
  if (indices_i64)
    gather_grad_keys_kernel<int64_t><<<blocks_for(count), kThreads, 0, s>>>(
        static_cast<const int64_t*>(indices), keys_in, pos_in, offsets, count, axis_dim);
  else
    gather_grad_keys_kernel<int32_t><<<blocks_for(count), kThreads, 0, s>>>(
        static_cast<const int32_t*>(indices), keys_in, pos_in, offsets, count, axis_dim);
  CUDA_CHECK_LAUNCH();
  size_t cub_bytes = l.cub_bytes;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(base + l.cub, cub_bytes, keys_in, keys_out,
                                                      pos_in, pos_out, static_cast<int>(count), 1,
                                                      offsets, offsets + 1, 0, 32, s));
  const int64_t n = outer * count * inner;
  dispatch_float(t, "GatherGrad", [&](auto tag) {
    using T = decltype(tag);
    gather_grad_sum_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(dy), keys_out, pos_out, acc, outer, axis_dim, inner, count);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
