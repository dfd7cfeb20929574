// The caching allocator's logic on host memory (malloc/free as the raw allocator): size classes,
// reuse, per-stream free lists, retired streams, out-of-memory recovery, stats. Runs in every
// build; the CUDA backend uses the same class over cudaMalloc.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/error.h"

using oat::cuda::CachingAllocator;
using oat::cuda::RawMemory;
using oat::cuda::round_size;

namespace {

// malloc with a byte budget, counting calls; fails (nullptr) above the budget.
struct FakeDevice {
  size_t budget = size_t{1} << 40;
  size_t used = 0;
  int allocs = 0, frees = 0;
  std::set<void*> live;
  std::map<void*, size_t> sizes;

  RawMemory raw() {
    return RawMemory{[this](size_t n) -> void* {
                       if (used + n > budget) return nullptr;
                       void* p = std::malloc(n);
                       used += n;
                       ++allocs;
                       live.insert(p);
                       sizes[p] = n;
                       return p;
                     },
                     [this](void* p) {
                       used -= sizes.at(p);
                       sizes.erase(p);
                       live.erase(p);
                       ++frees;
                       std::free(p);
                     }};
  }
};

}  // namespace

TEST_CASE("allocator size classes: 512 B minimum, quarter-octave steps, 2 MiB above 64 MiB") {
  CHECK(round_size(1) == 512);
  CHECK(round_size(512) == 512);
  CHECK(round_size(513) == 640);
  CHECK(round_size(1000) == 1024);
  CHECK(round_size(1025) == 1280);
  CHECK(round_size(3000) == 3072);
  CHECK(round_size(size_t{1} << 20) == size_t{1} << 20);
  CHECK(round_size((size_t{1} << 20) + 1) == (size_t{1} << 20) + (size_t{1} << 18));
  const size_t mib = size_t{1} << 20;
  CHECK(round_size(64 * mib) == 64 * mib);
  CHECK(round_size(64 * mib + 1) == 66 * mib);
  CHECK(round_size(100 * mib + 5) == 102 * mib);
  // Every class holds the request and wastes at most 25% (a 2 MiB step above 64 MiB).
  for (size_t n = 1; n < (size_t{1} << 24); n = n * 5 / 4 + 7) {
    const size_t r = round_size(n);
    CHECK(r >= n);
    if (n > 512) CHECK(r - n <= n / 4);
    CHECK(round_size(r) == r);  // classes are fixed points
  }
}

TEST_CASE("allocator reuses freed blocks of the same class on the same stream") {
  FakeDevice dev;
  CachingAllocator a(dev.raw());
  void* p = a.allocate(1000, 1);
  CHECK(a.block_size(p) == 1024);
  a.release(p);
  void* q = a.allocate(900, 1);  // same class (1024)
  CHECK(q == p);
  CHECK(dev.allocs == 1);
  void* r = a.allocate(2000, 1);  // another class: a new raw block
  CHECK(r != p);
  CHECK(dev.allocs == 2);
  a.release(q);
  a.release(r);
  const auto s = a.stats();
  CHECK(s.allocations == 3);
  CHECK(s.cache_hits == 1);
  CHECK(s.raw_allocations == 2);
  CHECK(s.in_use_bytes == 0);
  CHECK(s.cached_bytes == 1024 + 2048);
  CHECK(s.peak_in_use_bytes == 1024 + 2048);
  // The steady state of a training loop: the same requests again need no raw allocation.
  for (int step = 0; step < 10; ++step) {
    void* x = a.allocate(1000, 1);
    void* y = a.allocate(2000, 1);
    a.release(x);
    a.release(y);
  }
  CHECK(dev.allocs == 2);
  a.empty_cache();
  CHECK(dev.frees == 2);
  CHECK(a.stats().cached_bytes == 0);
  CHECK(dev.live.empty());
}

TEST_CASE("allocator keeps streams apart until a stream is retired") {
  FakeDevice dev;
  CachingAllocator a(dev.raw());
  void* p = a.allocate(4096, 1);
  a.release(p);
  void* q = a.allocate(4096, 2);  // stream 2 may not take stream 1's block
  CHECK(q != p);
  a.retire_stream(1);             // stream 1 synchronised: its blocks serve anyone
  void* r = a.allocate(4096, 2);
  CHECK(r == p);
  // A block still live on a retired stream goes to the shared pool when freed.
  void* s = a.allocate(8192, 3);
  a.retire_stream(3);
  a.release(s);
  void* t = a.allocate(8192, 4);
  CHECK(t == s);
  a.release(q);
  a.release(r);
  a.release(t);
  CHECK(a.stats().in_use_bytes == 0);
}

TEST_CASE("allocator large blocks: a cached block at most 1/8 larger is reused") {
  FakeDevice dev;
  CachingAllocator a(dev.raw());
  const size_t mib = size_t{1} << 20;
  void* p = a.allocate(100 * mib, 1);  // class 100 MiB
  a.release(p);
  void* q = a.allocate(90 * mib, 1);   // class 90 MiB: 100 ≤ 90 + 11.25, reused
  CHECK(q == p);
  a.release(q);
  void* r = a.allocate(80 * mib, 1);   // 100 > 80 + 10: a new block
  CHECK(r != p);
  a.release(r);
}

TEST_CASE("allocator out of memory: empties the cache and retries, then throws a clear error") {
  FakeDevice dev;
  dev.budget = 3 * 1024;
  CachingAllocator a(dev.raw());
  void* p = a.allocate(1024, 1);
  void* q = a.allocate(1024, 1);
  a.release(q);                      // 1024 cached
  void* r = a.allocate(2048, 1);     // 1024 + 2048 > 3072 only with the cache: it is freed
  CHECK(r != nullptr);
  CHECK(dev.frees == 1);
  CHECK_THROWS_WITH_AS(a.allocate(4096, 1),
                       doctest::Contains("device out of memory: cannot allocate 4096 bytes"),
                       oat::Error);
  a.release(p);
  a.release(r);
}

TEST_CASE("allocator edge cases: zero bytes, null and foreign pointers") {
  FakeDevice dev;
  CachingAllocator a(dev.raw());
  CHECK(a.allocate(0, 1) == nullptr);
  a.release(nullptr);
  int x = 0;
  CHECK_THROWS_AS(a.release(&x), oat::Error);
  CHECK(a.stats().allocations == 0);
}

TEST_CASE("allocator reserved pool (a CUDA graph's): survives empty_cache and OOM until retired") {
  FakeDevice dev;
  dev.budget = 4 * 1024;
  CachingAllocator a(dev.raw());
  const uint64_t pool = 77;
  a.reserve_stream(pool);
  void* g = a.allocate(1024, pool);  // memory a captured graph writes on every replay
  a.release(g);                      // freed inside the capture: cached in the private pool
  void* e = a.allocate(1024, 1);     // an eager allocation never receives the pool's block
  CHECK(e != g);
  a.release(e);
  a.empty_cache();                   // frees the eager block only
  CHECK(dev.frees == 1);
  CHECK(dev.live.count(g) == 1);
  CHECK(a.stats().cached_bytes == 1024);
  // Out of memory: the retry empties the cache but the pool's block stays, so 4 KiB cannot fit.
  CHECK_THROWS_AS(a.allocate(4096, 1), oat::Error);
  CHECK(dev.live.count(g) == 1);
  void* again = a.allocate(1024, pool);  // the graph's pool still serves its own requests
  CHECK(again == g);
  a.release(again);
  a.retire_stream(pool);             // the graph is gone: the block joins the synchronised pool
  a.empty_cache();
  CHECK(dev.live.empty());
  CHECK(a.stats().cached_bytes == 0);
  CHECK_THROWS_AS(a.reserve_stream(0), oat::Error);
}

TEST_CASE("allocator out of memory in a reserved pool (during a capture): no cache emptying") {
  FakeDevice dev;
  dev.budget = 2 * 1024;
  CachingAllocator a(dev.raw());
  const uint64_t pool = 5;
  void* e = a.allocate(1024, 1);
  a.release(e);  // 1 KiB cached for stream 1
  a.reserve_stream(pool);
  void* g = a.allocate(1024, pool);  // fits beside the cached block
  // Emptying the cache would free the eager block (a device synchronisation inside the capture);
  // the request fails instead, naming the capture and the way out.
  CHECK_THROWS_WITH_AS(a.allocate(1024, pool),
                       doctest::Contains("device out of memory while capturing the training step "
                                         "as a CUDA graph"),
                       oat::Error);
  CHECK(dev.frees == 0);
  CHECK(dev.live.count(e) == 1);
  // Outside the capture, stream 1 takes its cached block back.
  void* f = a.allocate(1024, 1);
  CHECK(f == e);  // the cached block itself
  a.release(f);
  a.release(g);
  a.retire_stream(pool);
}
