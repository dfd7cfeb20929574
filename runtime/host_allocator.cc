#include "runtime/host_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

namespace oat {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kPage = 4096;

size_t limit_from_env() {
  const char* v = std::getenv("OAT_HOST_CACHE_MB");
  if (!v || !*v) return size_t{2048} << 20;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  if (end == v || *end || *v == '-') {  // not a whole number of MiB: the default, said once
    std::fprintf(stderr,
                 "warning: OAT_HOST_CACHE_MB='%s' is not a whole number of MiB; using the "
                 "default 2048 (0 turns the cache off)\n",
                 v);
    return size_t{2048} << 20;
  }
  return static_cast<size_t>(mb) << 20;
}

class HostCache {
 public:
  void* allocate(size_t bytes) {
    if (bytes < kHostCacheMinBytes)
      return std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    const size_t size = (bytes + kPage - 1) / kPage * kPage;
    std::multimap<size_t, Cached> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size + size / 8) {
        void* p = it->second.ptr;
        cached_ -= it->first;
        live_.emplace(p, it->first);
        live_bytes_ += it->first;
        peak_live_ = std::max(peak_live_, live_bytes_);
        free_.erase(it);
        ++hits_;
        return p;
      }
      ++misses_;
      // A size the cache cannot serve: give back the least recently freed blocks until live +
      // cached bytes fit under twice the largest live set seen, so that sizes that never recur
      // (an input of another shape) do not pile up. (Under the peak itself, blocks that a run
      // frees early and needs again late were evicted by its own misses, run after run: 11 of
      // 55 allocations of ResNet-18 at batch 1 missed; with the factor 2, none.)
      peak_live_ = std::max(peak_live_, live_bytes_ + size);
      while (!free_.empty() && live_bytes_ + size + cached_ > 2 * peak_live_) {
        auto oldest = free_.begin();
        for (auto f = free_.begin(); f != free_.end(); ++f)
          if (f->second.seq < oldest->second.seq) oldest = f;
        cached_ -= oldest->first;
        drop.insert(*oldest);
        free_.erase(oldest);
      }
    }
    for (auto& [sz, c] : drop) std::free(c.ptr);
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) {  // what the cache holds may be what the system lacks
      clear();
      p = std::aligned_alloc(kAlign, size);
      if (!p) return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    live_.emplace(p, size);
    live_bytes_ += size;
    return p;
  }

  void release(void* p) {
    if (!p) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(p);
      if (it != live_.end()) {
        const size_t size = it->second;
        live_.erase(it);
        live_bytes_ -= size;
        if (cached_ + size <= limit_) {
          free_.emplace(size, Cached{p, ++seq_});
          cached_ += size;
          return;
        }
      }
    }
    std::free(p);  // a small block, or one past the bound
  }

  HostCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {cached_, free_.size(), hits_, misses_, limit_};
  }

  void set_limit(size_t bytes) {
    std::multimap<size_t, Cached> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      limit_ = bytes;
      while (cached_ > limit_) {  // the largest blocks first
        auto it = std::prev(free_.end());
        cached_ -= it->first;
        drop.insert(*it);
        free_.erase(it);
      }
    }
    for (auto& [size, c] : drop) std::free(c.ptr);
  }

  void clear() {
    std::multimap<size_t, Cached> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      drop.swap(free_);
      cached_ = 0;
      peak_live_ = live_bytes_;  // the largest live set is counted afresh from here
    }
    for (auto& [size, c] : drop) std::free(c.ptr);
  }

 private:
  struct Cached {
    void* ptr;
    size_t seq;  // order of release: lower is older
  };
  std::mutex mu_;
  std::multimap<size_t, Cached> free_;      // size -> cached block
  std::unordered_map<void*, size_t> live_;  // blocks handed out, by their rounded size
  size_t cached_ = 0;
  size_t live_bytes_ = 0, peak_live_ = 0;  // blocks handed out now; the most at once
  size_t seq_ = 0;
  size_t limit_ = limit_from_env();
  size_t hits_ = 0, misses_ = 0;
};

// Never destroyed: tensors held by static objects are released after main returns.
HostCache& cache() {
  static HostCache* c = new HostCache();
  return *c;
}

}  // namespace

void* host_allocate(size_t bytes) { return cache().allocate(bytes); }
void host_release(void* ptr) { cache().release(ptr); }
HostCacheStats host_cache_stats() { return cache().stats(); }
void host_cache_set_limit(size_t bytes) { cache().set_limit(bytes); }
void host_cache_clear() { cache().clear(); }

}  // namespace oat
