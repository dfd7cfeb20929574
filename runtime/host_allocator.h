// Host memory for CPU tensors: blocks of at least kHostCacheMinBytes are kept when freed and
// handed to the next allocation of (about) the same size, as the CUDA backend's caching
// allocator does on the device.
//
// Why: glibc serves blocks of this size with mmap and gives them back with munmap, so every run
// of a graph page-faulted its activations in afresh, the kernel zeroing each 4 KiB page (about
// 1 µs a page on this 2-vCPU VM). ResNet-18's 3.2 MB stem output made the Relu after it cost
// 0.75 ms where 0.1 ms of it was arithmetic; the whole batch-1 inference took 18.2 ms against
// 15.4 ms with the blocks kept (bench/README.md, fifth session).
//
// A request of `bytes` takes the smallest cached block of at least that size and at most an
// eighth more (so a slightly smaller batch reuses a block, and a small request never pins a
// large one). A request the cache cannot serve first gives back the least recently freed blocks
// until the blocks handed out plus those cached fit under twice the largest set ever handed out
// at once: a process holds at most twice its peak, however many sizes it sees (inputs of varying
// shapes), and a run that repeats (a training step, an inference loop) is served entirely from
// the cache (`oat_op_profile` prints the hits and misses of its timed runs). What is cached is also
// bounded: OAT_HOST_CACHE_MB (read once; default 2048, 0 turns the cache off) or
// host_cache_set_limit; a block freed past the bound goes back to the system, and when the system
// refuses an allocation the cache is emptied and the allocation retried.
#pragma once

#include <cstddef>
#include <new>

namespace oat {

constexpr size_t kHostCacheMinBytes = size_t{256} << 10;

// 64-byte aligned, uninitialised; nullptr when the system has no memory left. Blocks below
// kHostCacheMinBytes come straight from aligned_alloc (release them with std::free or
// host_release; both work).
void* host_allocate(size_t bytes);
// Releases a block from host_allocate: into the cache, or to the system.
void host_release(void* ptr);

struct HostCacheStats {
  size_t cached_bytes = 0;  // held in the cache, free
  size_t cached_blocks = 0;
  size_t hits = 0;    // allocations served from the cache
  size_t misses = 0;  // cacheable allocations that went to the system
  size_t limit_bytes = 0;
};
HostCacheStats host_cache_stats();

// Sets the bound (0: no caching from now on) and frees what exceeds it.
void host_cache_set_limit(size_t bytes);
// Returns every cached block to the system; the peak above is counted afresh from here.
void host_cache_clear();

// A kernel's temporary array of n trivially copyable T from host_allocate (uninitialised): the
// Winograd filters, the partial sums of a weight gradient, megabytes that a std::vector would
// take from mmap and page-fault in at every call.
template <class T>
class HostBuffer {
 public:
  explicit HostBuffer(size_t n) : p_(static_cast<T*>(host_allocate(n * sizeof(T)))) {
    if (!p_ && n) throw std::bad_alloc();
  }
  ~HostBuffer() { host_release(p_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  T* data() const { return p_; }

 private:
  T* p_;
};

}  // namespace oat
