// CachingAllocator: device memory handed out in size classes and kept on per-stream free lists,
// so that after the first training step no request reaches cudaMalloc (PyTorch's scheme, without
// block splitting).
//
// Size classes (round_size):
//   n ≤ 512 B             → 512 B
//   512 B < n ≤ 64 MiB    → n rounded up to a quarter of its power-of-two octave: for
//                           2^k < n ≤ 2^(k+1) the step is 2^(k-2), so at most 25% is wasted
//   n > 64 MiB            → n rounded up to 2 MiB
// A request is served from the free list of its exact class (large blocks: the smallest cached
// block at most 1/8 larger).
//
// Streams: a freed block returns to the free list of the stream it was allocated on, and only
// that stream reuses it, so reuse is ordered after every kernel that still reads it (stream
// order replaces events). Stream id 0 is the "synchronised" pool: blocks there have no pending
// work and serve any stream. retire_stream(s), called after s was synchronised, moves s's cached
// blocks there, and blocks still live on s go there when they are freed.
//
// The raw memory is a pair of functions, so the whole allocator runs (and is tested) on the host
// with malloc/free; the CUDA backend passes cudaMalloc/cudaFree (runtime/cuda/memory.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace oat::cuda {

constexpr size_t kMinBlock = 512;
constexpr size_t kLargeBlock = size_t{64} << 20;  // above: 2 MiB granularity
constexpr size_t kLargeStep = size_t{2} << 20;

// The size class (bytes actually reserved) of an n-byte request.
size_t round_size(size_t n);

struct RawMemory {
  std::function<void*(size_t)> alloc;  // nullptr when out of memory
  std::function<void(void*)> free;
};

struct AllocatorStats {
  size_t in_use_bytes = 0;       // rounded bytes held by live blocks
  size_t cached_bytes = 0;       // rounded bytes on free lists
  size_t peak_in_use_bytes = 0;
  uint64_t allocations = 0;      // allocate() calls with n > 0
  uint64_t cache_hits = 0;       // ... served from a free list
  uint64_t raw_allocations = 0;  // raw.alloc calls that succeeded
  uint64_t raw_frees = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawMemory raw);
  // Frees the cached blocks; blocks still live are leaked (their owners outlive the allocator).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // n bytes for work ordered on `stream`; nullptr for n == 0. When raw memory is exhausted the
  // cache is emptied and the request retried once; then throws Error with the request and stats.
  // A reserved stream (a CUDA graph's pool, allocating during its capture) throws at once: the
  // cache cannot be emptied while a capture records.
  void* allocate(size_t n, uint64_t stream);
  // Returns p (from allocate) to its stream's free list. nullptr is ignored; an unknown pointer
  // throws Error.
  void release(void* p);
  // `stream` has been synchronised and will not be used again (see the header comment). Also
  // ends a reservation (below).
  void retire_stream(uint64_t stream);
  // Reserves the pool of `stream` (a private pool id, e.g. a CUDA graph's): its cached blocks
  // are never freed by empty_cache() or the out-of-memory retry, because a captured graph keeps
  // writing to them on every replay. retire_stream() ends the reservation.
  void reserve_stream(uint64_t stream);
  // Frees every cached block except those of reserved pools (call with no kernel in flight that
  // uses one: cudaFree synchronises).
  void empty_cache();

  AllocatorStats stats() const;
  // The reserved size of a live block p.
  size_t block_size(const void* p) const;

 private:
  struct Block {
    size_t size;
    uint64_t stream;
  };
  using FreeKey = std::pair<uint64_t, size_t>;  // (stream, size)

  void* take_cached(uint64_t stream, size_t size);  // nullptr when none fits
  void free_cached_locked();

  RawMemory raw_;
  mutable std::mutex mu_;
  std::unordered_map<void*, Block> live_;
  std::multimap<FreeKey, void*> free_;
  std::set<uint64_t> retired_;
  std::set<uint64_t> reserved_;
  AllocatorStats stats_;
};

}  // namespace oat::cuda
