#include <cub/device/device_segmented_radix_sort.cuh>

#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/topk_impl.h"

namespace oat::cuda {

namespace {

// The scratch layout: keys in/out (uint32), lane positions in/out (int32), lanes + 1 segment
// offsets (int32), then CUB's temporary storage; each part 256-byte aligned.
struct TopKScratch {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, offsets = 0, cub = 0;
  size_t cub_bytes = 0, total = 0;
};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

TopKScratch scratch_layout(int64_t lanes, int64_t len) {
  const int items = static_cast<int>(lanes * len), segments = static_cast<int>(lanes);
  TopKScratch l;
  const int* no_offsets = nullptr;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
      nullptr, l.cub_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), items, segments,
      no_offsets, no_offsets + 1, 0, 32));
  const size_t words = align256(static_cast<size_t>(items) * 4);
  l.keys_out = l.keys_in + words;
  l.pos_in = l.keys_out + words;
  l.pos_out = l.pos_in + words;
  l.offsets = l.pos_out + words;
  l.cub = l.offsets + align256((static_cast<size_t>(segments) + 1) * 4);
  l.total = l.cub + align256(l.cub_bytes);
  return l;
}

// An order-preserving unsigned key of v: ascending keys sort the values ascending, NaN (made the
// positive quiet NaN) above +inf, -0 equal to +0; complemented for largest-first.
__device__ __forceinline__ uint32_t order_key(float v, bool largest) {
  uint32_t u = isnan(v) ? 0x7fc00000u : __float_as_uint(v == 0.f ? 0.f : v);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return largest ? ~u : u;
}

// Element e of the lane-major [lanes, len] view: key and position j within its lane.
template <class T>
__global__ void topk_keys_kernel(const T* x, uint32_t* keys, int32_t* pos, int64_t n, int64_t len,
                                 int64_t inner, bool largest) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t lane = e / len, j = e - lane * len;
    const int64_t o = lane / inner, i = lane - o * inner;
    keys[e] = order_key(to_float(x[(o * len + j) * inner + i]), largest);
    pos[e] = static_cast<int32_t>(j);
  }
}

__global__ void topk_offsets_kernel(int32_t* offsets, int64_t segments, int64_t len) {
  OAT_GRID_STRIDE_LOOP(s, segments + 1) offsets[s] = static_cast<int32_t>(s * len);
}

// Output element e of [outer, k, inner]: the j-th of its lane's sorted positions.
template <class T>
__global__ void topk_gather_kernel(const T* x, const int32_t* sorted_pos, T* values,
                                   int64_t* indices, int64_t n, int64_t len, int64_t inner,
                                   int64_t k) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t i = e % inner, j = (e / inner) % k, o = e / (inner * k);
    const int64_t src = sorted_pos[(o * inner + i) * len + j];
    values[e] = x[(o * len + src) * inner + i];
    indices[e] = src;
  }
}

}  // namespace

size_t topk_scratch_bytes(int64_t lanes, int64_t len) { return scratch_layout(lanes, len).total; }

void launch_topk(ElemType t, const void* x, void* values, int64_t* indices, int64_t outer,
                 int64_t len, int64_t inner, int64_t k, bool largest, void* scratch,
                 size_t scratch_bytes, cudaStream_t s) {
  const int64_t lanes = outer * inner, items = lanes * len;
  if (lanes == 0 || k == 0) return;
  const TopKScratch l = scratch_layout(lanes, len);
  if (scratch_bytes < l.total) throw std::runtime_error("TopK: scratch too small");
  char* base = static_cast<char*>(scratch);
  auto* keys_in = reinterpret_cast<uint32_t*>(base + l.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(base + l.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(base + l.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(base + l.pos_out);
  auto* offsets = reinterpret_cast<int32_t*>(base + l.offsets);
  dispatch_float(t, "TopK", [&](auto tag) {
    using T = decltype(tag);
    topk_keys_kernel<T><<<blocks_for(items), kThreads, 0, s>>>(static_cast<const T*>(x), keys_in,
                                                               pos_in, items, len, inner, largest);
  });
  CUDA_CHECK_LAUNCH();
  topk_offsets_kernel<<<blocks_for(lanes + 1), kThreads, 0, s>>>(offsets, lanes, len);
  CUDA_CHECK_LAUNCH();
  size_t cub_bytes = l.cub_bytes;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
      base + l.cub, cub_bytes, keys_in, keys_out, pos_in, pos_out, static_cast<int>(items),
      static_cast<int>(lanes), offsets, offsets + 1, 0, 32, s));
  const int64_t n = lanes * k;
  dispatch_float(t, "TopK", [&](auto tag) {
    using T = decltype(tag);
    topk_gather_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(x), pos_out, static_cast<T*>(values), indices, n, len, inner, k);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
