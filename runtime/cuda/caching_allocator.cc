// Compiled in every build (no CUDA in it): see caching_allocator.h.
#include "runtime/cuda/caching_allocator.h"

#include <algorithm>

#include "runtime/error.h"

namespace oat::cuda {

namespace {

size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

int floor_log2(size_t v) {
  int k = 0;
  while (v >>= 1) ++k;
  return k;
}

}  // namespace

size_t round_size(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  if (n > kLargeBlock) return round_up(n, kLargeStep);
  const int k = floor_log2(n - 1);  // 2^k ≤ n-1 < 2^(k+1), so 2^k < n ≤ 2^(k+1); k ≥ 9 here
  return round_up(n, size_t{1} << (k - 2));
}

CachingAllocator::CachingAllocator(RawMemory raw) : raw_(std::move(raw)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_locked();
}

void* CachingAllocator::take_cached(uint64_t stream, size_t size) {
  // Exact class for ordinary blocks; a block up to 1/8 larger for large ones.
  const size_t limit = size > kLargeBlock ? size + size / 8 : size;
  for (uint64_t s : {stream, uint64_t{0}}) {
    auto it = free_.lower_bound({s, size});
    if (it != free_.end() && it->first.first == s && it->first.second <= limit) {
      void* p = it->second;
      const size_t got = it->first.second;
      free_.erase(it);
      live_[p] = Block{got, stream};
      stats_.cached_bytes -= got;
      stats_.in_use_bytes += got;
      return p;
    }
    if (stream == 0) break;
  }
  return nullptr;
}

void* CachingAllocator::allocate(size_t n, uint64_t stream) {
  if (n == 0) return nullptr;
  const size_t size = round_size(n);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.allocations;
  void* p = take_cached(stream, size);
  if (p) {
    ++stats_.cache_hits;
  } else {
    p = raw_.alloc(size);
    // A reserved pool is a CUDA graph's, and allocates only while the graph is captured: emptying
    // the cache then would synchronise the device (raw free), which invalidates the capture.
    const bool capture = reserved_.count(stream) != 0;
    if (!p && !capture) {
      free_cached_locked();
      p = raw_.alloc(size);
    }
    if (!p && capture)
      throw Error(cat("device out of memory while capturing the training step as a CUDA graph: "
                      "cannot allocate ", n, " bytes (class ", size, "); ", stats_.in_use_bytes,
                      " bytes in use, ", stats_.cached_bytes,
                      " cached (not freed during a capture); a smaller --batch, or "
                      "--no-cuda-graph"));
    if (!p)
      throw Error(cat("device out of memory: cannot allocate ", n, " bytes (class ", size,
                      "); ", stats_.in_use_bytes, " bytes in use, cache emptied"));
    ++stats_.raw_allocations;
    live_[p] = Block{size, stream};
    stats_.in_use_bytes += size;
  }
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return p;
}

void CachingAllocator::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) throw Error("CachingAllocator::release: pointer was not allocated here");
  Block b = it->second;
  live_.erase(it);
  if (retired_.count(b.stream)) b.stream = 0;
  free_.emplace(FreeKey{b.stream, b.size}, p);
  stats_.in_use_bytes -= b.size;
  stats_.cached_bytes += b.size;
}

void CachingAllocator::retire_stream(uint64_t stream) {
  if (stream == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  retired_.insert(stream);
  reserved_.erase(stream);
  auto lo = free_.lower_bound({stream, 0});
  auto hi = free_.lower_bound({stream + 1, 0});
  std::vector<std::pair<size_t, void*>> moved;
  for (auto it = lo; it != hi; ++it) moved.emplace_back(it->first.second, it->second);
  free_.erase(lo, hi);
  for (auto& [size, p] : moved) free_.emplace(FreeKey{0, size}, p);
}

void CachingAllocator::reserve_stream(uint64_t stream) {
  if (stream == 0) throw Error("CachingAllocator::reserve_stream: pool 0 cannot be reserved");
  std::lock_guard<std::mutex> lock(mu_);
  reserved_.insert(stream);
}

void CachingAllocator::free_cached_locked() {
  for (auto it = free_.begin(); it != free_.end();) {
    if (reserved_.count(it->first.first)) {
      ++it;
      continue;
    }
    raw_.free(it->second);
    ++stats_.raw_frees;
    stats_.cached_bytes -= it->first.second;
    it = free_.erase(it);
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t CachingAllocator::block_size(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(const_cast<void*>(p));
  if (it == live_.end()) throw Error("CachingAllocator::block_size: pointer is not live");
  return it->second.size;
}

}  // namespace oat::cuda
