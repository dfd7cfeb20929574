// The CUDA emulator's stand-in for CUB's DeviceSegmentedRadixSort (the part the backend uses):
// the same two-phase protocol (a null d_temp_storage asks for the temporary storage size), the same
// argument checks, and the same result: within each segment [begin[i], end[i]) the pairs stably
// sorted by the key bits [begin_bit, end_bit) in ascending order (descending for the *Descending
// variant). The sort is enqueued on `stream` like any device work (recorded while capturing).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "runtime/cuda/emulator/stream.h"

namespace cub {

struct DeviceSegmentedRadixSort {
  template <class K, class V, class BeginIt, class EndIt>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const K* keys_in,
                               K* keys_out, const V* values_in, V* values_out, int num_items,
                               int num_segments, BeginIt begin_offsets, EndIt end_offsets,
                               int begin_bit = 0, int end_bit = sizeof(K) * 8,
                               cudaStream_t stream = nullptr) {
    return sort(false, d_temp_storage, temp_storage_bytes, keys_in, keys_out, values_in, values_out,
                num_items, num_segments, begin_offsets, end_offsets, begin_bit, end_bit, stream);
  }
  template <class K, class V, class BeginIt, class EndIt>
  static cudaError_t SortPairsDescending(void* d_temp_storage, size_t& temp_storage_bytes,
                                         const K* keys_in, K* keys_out, const V* values_in,
                                         V* values_out, int num_items, int num_segments,
                                         BeginIt begin_offsets, EndIt end_offsets,
                                         int begin_bit = 0, int end_bit = sizeof(K) * 8,
                                         cudaStream_t stream = nullptr) {
    return sort(true, d_temp_storage, temp_storage_bytes, keys_in, keys_out, values_in, values_out,
                num_items, num_segments, begin_offsets, end_offsets, begin_bit, end_bit, stream);
  }

 private:
  template <class K, class V, class BeginIt, class EndIt>
  static cudaError_t sort(bool descending, void* d_temp_storage, size_t& temp_storage_bytes,
                          const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                          int num_items, int num_segments, BeginIt begin_offsets,
                          EndIt end_offsets, int begin_bit, int end_bit, cudaStream_t stream) {
    static_assert(std::is_unsigned<K>::value, "the emulator sorts unsigned keys only");
    // Some bytes per item, as CUB asks for a few buffers' worth.
    const size_t need = 256 + 2 * sizeof(K) * static_cast<size_t>(std::max(num_items, 0));
    if (!d_temp_storage) {
      temp_storage_bytes = need;
      return cudaSuccess;
    }
    if (temp_storage_bytes < need || num_items < 0 || num_segments < 0 || begin_bit < 0 ||
        end_bit > static_cast<int>(sizeof(K) * 8) || begin_bit > end_bit)
      return cudaErrorInvalidValue;
    oat_emu::enqueue(stream, "cub::DeviceSegmentedRadixSort", [=] {
      const int width = end_bit - begin_bit;
      const K mask = width >= static_cast<int>(sizeof(K) * 8) ? static_cast<K>(~K(0))
                                                               : static_cast<K>((K(1) << width) - 1);
      auto bits = [&](K k) { return static_cast<K>((k >> begin_bit) & mask); };
      for (int sgm = 0; sgm < num_segments; ++sgm) {
        const int b = static_cast<int>(begin_offsets[sgm]), e = static_cast<int>(end_offsets[sgm]);
        if (e <= b) continue;
        std::vector<int> order(static_cast<size_t>(e - b));
        std::iota(order.begin(), order.end(), b);
        std::stable_sort(order.begin(), order.end(), [&](int i, int j) {
          return descending ? bits(keys_in[i]) > bits(keys_in[j]) : bits(keys_in[i]) < bits(keys_in[j]);
        });
        std::vector<K> k(order.size());
        std::vector<V> v(order.size());
        for (size_t r = 0; r < order.size(); ++r) {
          k[r] = keys_in[order[r]];
          v[r] = values_in[order[r]];
        }
        std::copy(k.begin(), k.end(), keys_out + b);
        std::copy(v.begin(), v.end(), values_out + b);
      }
    });
    return cudaSuccess;
  }
};

}  // namespace cub
