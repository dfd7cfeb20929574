// host_allocator.h: large CPU blocks are kept when freed and reused by the next allocation of
// about the same size, within a bound; small ones go straight to the system.
#include "runtime/host_allocator.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "runtime/tensor.h"

using namespace oat;

namespace {

// Restores the bound the process started with, whatever a case sets.
struct LimitGuard {
  size_t saved = host_cache_stats().limit_bytes;
  ~LimitGuard() { host_cache_set_limit(saved); }
};

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

TEST_CASE("host_allocate: a freed large block serves the next request of its size") {
  LimitGuard guard;
  host_cache_set_limit(64 * kMiB);
  host_cache_clear();
  void* a = host_allocate(3 * kMiB + 5);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  std::memset(a, 1, 3 * kMiB + 5);  // the whole request is usable
  const HostCacheStats before = host_cache_stats();
  host_release(a);
  CHECK(host_cache_stats().cached_blocks == before.cached_blocks + 1);
  CHECK(host_cache_stats().cached_bytes >= 3 * kMiB + 5);

  void* b = host_allocate(3 * kMiB);  // a little smaller: within an eighth, the same block
  CHECK(b == a);
  CHECK(host_cache_stats().hits == before.hits + 1);
  CHECK(host_cache_stats().cached_blocks == before.cached_blocks);
  host_release(b);

  // A request more than an eighth smaller is not served by the 3 MiB block: a miss, and the
  // block stays cached (1 MiB live + 3 MiB cached is under twice the 3 MiB peak).
  const size_t misses = host_cache_stats().misses;
  void* c = host_allocate(kMiB);
  CHECK(c != nullptr);
  CHECK(host_cache_stats().misses == misses + 1);
  CHECK(host_cache_stats().cached_blocks == 1);
  host_release(c);
  host_cache_clear();
  CHECK(host_cache_stats().cached_bytes == 0);
  CHECK(host_cache_stats().cached_blocks == 0);
}

TEST_CASE("host_allocate: sizes that do not recur give way, oldest first") {
  LimitGuard guard;
  host_cache_set_limit(128 * kMiB);
  host_cache_clear();  // the peak is counted afresh: 32 MiB below
  void* a = host_allocate(16 * kMiB);
  void* b = host_allocate(16 * kMiB);
  host_release(a);  // freed first: the older
  host_release(b);
  CHECK(host_cache_stats().cached_blocks == 2);
  // Steady state: the same sizes again are served from the cache, nothing is dropped.
  void* a2 = host_allocate(16 * kMiB);
  void* b2 = host_allocate(16 * kMiB);
  CHECK(host_cache_stats().cached_blocks == 0);
  CHECK(((a2 == a && b2 == b) || (a2 == b && b2 == a)));
  host_release(a2);
  host_release(b2);
  void* c = host_allocate(24 * kMiB);  // 24 + 32 cached: under 2 x 32, nothing dropped
  CHECK(host_cache_stats().cached_blocks == 2);
  host_release(c);
  CHECK(host_cache_stats().cached_bytes == 56 * kMiB);
  // 12 MiB more would hold 68 MiB, past 2 x 32: the oldest cached block (16 MiB) is freed.
  void* d = host_allocate(12 * kMiB);
  CHECK(host_cache_stats().cached_blocks == 2);
  CHECK(host_cache_stats().cached_bytes == 40 * kMiB);
  host_release(d);
  host_cache_clear();
}

TEST_CASE("host_allocate: small blocks and a zero bound bypass the cache") {
  LimitGuard guard;
  host_cache_set_limit(64 * kMiB);
  host_cache_clear();
  void* s = host_allocate(1000);
  REQUIRE(s != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(s) % 64 == 0);
  host_release(s);  // a small block: freed, not cached
  CHECK(host_cache_stats().cached_blocks == 0);

  host_cache_set_limit(0);
  void* a = host_allocate(2 * kMiB);
  host_release(a);
  CHECK(host_cache_stats().cached_blocks == 0);
  CHECK(host_cache_stats().cached_bytes == 0);
}

TEST_CASE("host_allocate: the bound holds, and lowering it frees what exceeds it") {
  LimitGuard guard;
  host_cache_set_limit(5 * kMiB);
  host_cache_clear();
  void* a = host_allocate(2 * kMiB);
  void* b = host_allocate(2 * kMiB);
  void* c = host_allocate(2 * kMiB);
  host_release(a);
  host_release(b);
  host_release(c);  // 6 MiB would exceed 5: this one goes back to the system
  CHECK(host_cache_stats().cached_blocks == 2);
  CHECK(host_cache_stats().cached_bytes == 4 * kMiB);
  host_cache_set_limit(3 * kMiB);
  CHECK(host_cache_stats().cached_blocks == 1);
  CHECK(host_cache_stats().cached_bytes <= 3 * kMiB);
  host_cache_clear();
}

TEST_CASE("Tensor storage: a large tensor's memory is reused after it is released") {
  LimitGuard guard;
  host_cache_set_limit(64 * kMiB);
  host_cache_clear();
  const void* first = nullptr;
  {
    Tensor t(DType::F32, {256, 1024});  // 1 MiB
    first = t.raw_data();
  }
  CHECK(host_cache_stats().cached_blocks == 1);
  Tensor u(DType::F32, {256, 1024});
  CHECK(u.raw_data() == first);
  CHECK(host_cache_stats().cached_blocks == 0);
  Tensor z = Tensor::zeros(DType::F32, {300, 1000});  // zeros() clears reused memory too
  {
    Tensor dirty(DType::F32, {300, 1000});
    std::memset(dirty.raw_data(), 0xff, dirty.nbytes());
  }
  Tensor z2 = Tensor::zeros(DType::F32, {300, 1000});
  bool all_zero = true;
  for (int64_t i = 0; i < z2.numel(); ++i) all_zero &= z2.data<float>()[i] == 0.0f;
  CHECK(all_zero);
}

TEST_CASE("HostBuffer: cached storage for a kernel's temporaries") {
  LimitGuard guard;
  host_cache_set_limit(64 * kMiB);
  host_cache_clear();
  float* p = nullptr;
  {
    HostBuffer<float> buf(size_t{1} << 20);
    p = buf.data();
    p[0] = 1.0f;
    p[(size_t{1} << 20) - 1] = 2.0f;
  }
  HostBuffer<float> again(size_t{1} << 20);
  CHECK(again.data() == p);
  HostBuffer<double> empty(0);  // zero elements: a valid, empty buffer
  (void)empty;
}
