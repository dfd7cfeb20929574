#include "runtime/cuda/memory.h"

#include "runtime/cuda/check.h"
#include "runtime/cuda/device.h"
#include "runtime/tensor.h"

#ifdef OAT_CUDA_EMULATED
#include "runtime/cuda/emulator/stream.h"
#endif

namespace oat::cuda {

namespace {

thread_local CurrentStream t_current;

void* raw_alloc(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky; clear it so the retry can succeed
    return nullptr;
  }
  return p;
}

// Cached blocks are freed on an out-of-memory retry and by empty_cache: kernels queued on any
// stream may still use them, and cudaFree is only documented to *may* synchronise, so wait for
// the device first.
void raw_free(void* p) {
  cudaDeviceSynchronize();
  cudaFree(p);
}

void release_block(void* p) { device_allocator().release(p); }

}  // namespace

CachingAllocator& device_allocator() {
  // Never destroyed: tensors held by statics may be freed after main returns.
  static CachingAllocator* a = new CachingAllocator(RawMemory{raw_alloc, raw_free});
  return *a;
}

CurrentStream current_stream() { return t_current; }

CurrentStream set_current_stream(CurrentStream s) {
  CurrentStream old = t_current;
  t_current = s;
  return old;
}

std::shared_ptr<Storage> allocate_storage(size_t bytes) {
  static const bool ok = [] {
    require_device();  // "no CUDA device: ..." rather than an out-of-memory error
    return true;
  }();
  (void)ok;
  void* p = device_allocator().allocate(bytes, t_current.id);
#ifdef OAT_CUDA_EMULATED
  // The emulator: a reused block reads as NaN again and writes past `bytes` are caught.
  if (p) oat_emu::set_extent(p, bytes);
#endif
  return Storage::make_external(p, bytes, Device::CUDA, p ? release_block : nullptr);
}

void copy_bytes(void* dst, bool dst_cuda, const void* src, bool src_cuda, size_t bytes) {
  if (bytes == 0) return;
  const cudaMemcpyKind kind = dst_cuda ? (src_cuda ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                       : (src_cuda ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  // Outside an executor (t_current.stream is the legacy default stream) the tensor may still be
  // written by an executor's stream, which is non-blocking, so the legacy stream does not wait for
  // it: wait for the whole device first.
  if (!t_current.stream) CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, t_current.stream));
  CUDA_CHECK(cudaStreamSynchronize(t_current.stream));
}

}  // namespace oat::cuda
