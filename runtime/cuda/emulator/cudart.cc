// The CUDA emulator's runtime API: the subset of libcudart the backend calls, with the real
// header's signatures (cuda_runtime_api.h), implemented on the CPU. See README.md beside this file.
//
// Device memory is one reserved address range ("the arena", 16 GiB of address space, committed
// as used) that host code cannot touch: it is PROT_NONE except while device work runs (kernels,
// copies, cuBLAS/cuDNN calls, inside enqueue()), so a host dereference of a device pointer faults
// with a message instead of working by accident. Fresh allocations are filled with 0xFF bytes
// (NaN in every float type) so a read of memory nobody wrote shows up in results.
//
// Streams are in order and the emulated device finishes each piece of work before the call
// returns. A capturing stream records work into a graph instead; the capture rules that the
// backend relies on are enforced as the CUDA runtime enforces them: synchronising a capturing
// stream (or the device) during a capture is cudaErrorStreamCaptureUnsupported and invalidates
// the capture, cudaMalloc is allowed only in relaxed mode, and work issued to the legacy stream
// while a capture runs is an error.
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/emulator/stream.h"

struct Op {
  std::string what;
  bool device = true;  // needs device memory access
  std::function<void()> work;
};

struct CUstream_st {
  bool capturing = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  bool invalidated = false;
  std::string why;
  std::vector<Op> ops;
};
struct CUgraph_st {
  std::vector<Op> ops;
};
struct CUgraphExec_st {
  std::vector<Op> ops;
};

namespace oat_emu {
namespace {

constexpr size_t kArenaBytes = size_t{16} << 30;
constexpr size_t kAlign = 256;
constexpr size_t kRedzone = 256;  // bytes after every allocation's extent that must stay intact
constexpr unsigned char kCanary = 0xFF;  // NaN in every float type: a read past the end shows too

std::recursive_mutex g_mutex;
thread_local cudaError_t t_last_error = cudaSuccess;

// ---- the arena ---------------------------------------------------------------------------
struct Arena {
  char* base = nullptr;
  size_t high = 0;                       // bytes from base ever handed out (page rounded)
  std::map<size_t, size_t> free_blocks;  // offset -> size, coalesced
  std::map<size_t, size_t> used;         // offset -> size (rounded up to kAlign)
  // offset -> the bytes in use: what cudaMalloc was asked for, or what set_extent says of a
  // block the caching allocator hands out again. Up to kRedzone bytes after it are a canary.
  std::map<size_t, size_t> requested;
  std::map<size_t, size_t> malloc_size;  // offset -> what cudaMalloc was asked for
  int open_depth = 0;
  bool protect = true;
};

Arena& arena();

void segv_handler(int sig, siginfo_t* info, void*) {
  const char* a = static_cast<const char*>(info->si_addr);
  Arena& ar = arena();
  if (a >= ar.base && a < ar.base + kArenaBytes) {
    char msg[256];
    const int len = std::snprintf(
        msg, sizeof msg,
        "CUDA emulator: host code touched device memory at %p (a device pointer dereferenced "
        "on the host)\n", static_cast<const void*>(a));
    if (len > 0) (void)!write(2, msg, static_cast<size_t>(len));
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_fault_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
}

namespace {

Arena& arena() {
  static Arena* a = [] {
    auto* ar = new Arena;
    void* p = mmap(nullptr, kArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "CUDA emulator: cannot reserve the device arena\n");
      std::abort();
    }
    ar->base = static_cast<char*>(p);
    ar->free_blocks[0] = kArenaBytes;
    const char* env = std::getenv("OAT_EMU_PROTECT");
    ar->protect = !(env && std::string(env) == "0");
    install_fault_handler();
    return ar;
  }();
  return *a;
}

void set_access(bool open) {
  Arena& a = arena();
  if (!a.protect || a.high == 0) return;
  mprotect(a.base, a.high, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

void* arena_alloc(size_t n) {
  Arena& a = arena();
  const size_t need = round_up(n + kRedzone, kAlign);
  for (auto it = a.free_blocks.begin(); it != a.free_blocks.end(); ++it) {
    if (it->second < need) continue;
    const size_t off = it->first, size = it->second;
    a.free_blocks.erase(it);
    if (size > need) a.free_blocks[off + need] = size - need;
    a.used[off] = need;
    a.requested[off] = n;
    a.malloc_size[off] = n;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t end = round_up(off + need, page);
    if (end > a.high) {
      a.high = end;
    }
    DeviceAccess open;
    std::memset(a.base + off, 0xFF, n);
    std::memset(a.base + off + n, kCanary, need - n);
    return a.base + off;
  }
  return nullptr;
}

bool arena_free(void* p) {
  Arena& a = arena();
  if (!p) return true;
  const char* c = static_cast<const char*>(p);
  if (c < a.base || c >= a.base + kArenaBytes) return false;
  const size_t off = static_cast<size_t>(c - a.base);
  auto it = a.used.find(off);
  if (it == a.used.end()) return false;
  size_t start = off, size = it->second;
  a.used.erase(it);
  a.requested.erase(off);
  a.malloc_size.erase(off);
  auto next = a.free_blocks.lower_bound(start);
  if (next != a.free_blocks.end() && next->first == start + size) {
    size += next->second;
    next = a.free_blocks.erase(next);
  }
  if (next != a.free_blocks.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      a.free_blocks.erase(prev);
    }
  }
  a.free_blocks[start] = size;
  return true;
}

// ---- streams and captures ------------------------------------------------------------------
std::set<cudaStream_t>& streams() {
  static std::set<cudaStream_t> s;
  return s;
}

bool is_legacy(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

bool any_capture() {
  for (cudaStream_t s : streams())
    if (s->capturing) return true;
  return false;
}

void invalidate_all(const char* what) {
  for (cudaStream_t s : streams())
    if (s->capturing && !s->invalidated) {
      s->invalidated = true;
      s->why = what;
    }
}

// After each piece of device work: every allocation's redzone must still hold the canary, else
// that work wrote past the end of a buffer (a GPU would corrupt a neighbour silently).
void check_redzones(const std::string& what) {
  Arena& a = arena();
  for (const auto& [off, extent] : a.requested) {
    const size_t size = a.used.at(off);
    const size_t end = std::min(size, extent + kRedzone);
    const unsigned char* p = reinterpret_cast<const unsigned char*>(a.base + off);
    for (size_t i = extent; i < end; ++i)
      if (p[i] != kCanary) {
        std::fprintf(stderr,
                     "CUDA emulator: %s wrote past the end of a %zu-byte device buffer at %p "
                     "(byte %zu after its end)\n",
                     what.c_str(), extent, static_cast<const void*>(p), i - extent);
        std::abort();
      }
  }
}

void run_op(const Op& op) {
  if (op.device) {
    DeviceAccess open;
    op.work();
    check_redzones(op.what);
  } else {
    op.work();
  }
}

void enqueue_op(cudaStream_t stream, Op op) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (is_legacy(stream)) {
    if (any_capture()) {
      invalidate_all(op.what.c_str());
      record_error(cudaErrorStreamCaptureImplicit);
      return;
    }
  } else if (stream->capturing) {
    stream->ops.push_back(std::move(op));
    return;
  }
  run_op(op);
}

cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

// The copy direction `kind` must match where the pointers live (cudaMemcpyDefault: any), and a
// device range must lie inside one allocation.
cudaError_t check_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  const bool dd = is_device_pointer(dst), sd = is_device_pointer(src);
  switch (kind) {
    case cudaMemcpyHostToHost: if (dd || sd) return cudaErrorInvalidValue; break;
    case cudaMemcpyHostToDevice: if (!dd || sd) return cudaErrorInvalidValue; break;
    case cudaMemcpyDeviceToHost: if (dd || !sd) return cudaErrorInvalidValue; break;
    case cudaMemcpyDeviceToDevice: if (!dd || !sd) return cudaErrorInvalidValue; break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  if (dd && !device_range(dst, n)) return cudaErrorInvalidValue;
  if (sd && !device_range(src, n)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t sync_point(cudaStream_t s, const char* what) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (is_legacy(s) ? any_capture() : s->capturing) {
    if (is_legacy(s)) invalidate_all(what);
    else return capture_violation(s, what);
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  return cudaSuccess;
}

int emulated_devices() {
  const char* env = std::getenv("OAT_EMU_DEVICES");
  return env && std::string(env) == "0" ? 0 : 1;
}

}  // namespace

// ---- stream.h ------------------------------------------------------------------------------
DeviceAccess::DeviceAccess() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (arena().open_depth++ == 0) set_access(true);
}
DeviceAccess::~DeviceAccess() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (--arena().open_depth == 0) set_access(false);
}

void enqueue(cudaStream_t stream, const char* what, std::function<void()> work) {
  enqueue_op(stream, Op{what, true, std::move(work)});
}
void enqueue_host(cudaStream_t stream, const char* what, std::function<void()> work) {
  enqueue_op(stream, Op{what, false, std::move(work)});
}

bool capturing(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return is_legacy(stream) ? any_capture() : stream->capturing;
}

cudaError_t capture_violation(cudaStream_t stream, const char* what) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (!is_legacy(stream) && stream->capturing && !stream->invalidated) {
    stream->invalidated = true;
    stream->why = what;
  }
  return cudaErrorStreamCaptureUnsupported;
}

void record_error(cudaError_t e) { t_last_error = e; }

void set_extent(void* p, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  Arena& a = arena();
  if (!is_device_pointer(p)) return;
  const size_t off = static_cast<size_t>(static_cast<char*>(p) - a.base);
  auto it = a.malloc_size.find(off);
  if (it == a.malloc_size.end() || n > it->second) return;
  if (any_capture()) {
    // Blocks are reused in stream order inside a capture: the recorded work of the block's
    // previous tensor runs at replay, after this call, and may write all of it. Only the whole
    // allocation is guarded while capturing; nothing is poisoned (nothing recorded has run).
    a.requested[off] = it->second;
    return;
  }
  a.requested[off] = n;
  DeviceAccess open;
  std::memset(a.base + off, 0xFF, n);
  std::memset(a.base + off + n, kCanary, std::min(a.used.at(off) - n, kRedzone));
}

bool device_range(const void* p, size_t n, const char** base, size_t* size) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  Arena& a = arena();
  const char* c = static_cast<const char*>(p);
  if (c < a.base || c >= a.base + kArenaBytes) return false;
  const size_t off = static_cast<size_t>(c - a.base);
  auto it = a.requested.upper_bound(off);
  if (it == a.requested.begin()) return false;
  --it;
  if (off + n > it->first + it->second) return false;
  if (base) *base = a.base + it->first;
  if (size) *size = it->second;
  return true;
}

bool is_device_pointer(const void* p) {
  Arena& a = arena();
  const char* c = static_cast<const char*>(p);
  return c >= a.base && c < a.base + kArenaBytes;
}

}  // namespace oat_emu

using oat_emu::enqueue;
using oat_emu::fail;

// ---- errors and devices --------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  const cudaError_t e = oat_emu::t_last_error;
  oat_emu::t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return oat_emu::t_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    default: return "unknown error";
  }
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue);
  *count = oat_emu::emulated_devices();
  return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 && oat_emu::emulated_devices() ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p) return fail(cudaErrorInvalidValue);
  if (device != 0 || !oat_emu::emulated_devices()) return fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "CUDA emulator on the CPU (not a GPU)");
  p->major = 9;
  p->minor = 0;
  p->totalGlobalMem = oat_emu::kArenaBytes;
  p->sharedMemPerBlock = 48 * 1024;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  size_t used = 0;
  for (const auto& u : oat_emu::arena().used) used += u.second;
  if (free_bytes) *free_bytes = oat_emu::kArenaBytes - used;
  if (total) *total = oat_emu::kArenaBytes;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (oat_emu::any_capture()) {
    oat_emu::invalidate_all("cudaDeviceSynchronize");
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  return cudaSuccess;
}

// ---- memory --------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!p) return fail(cudaErrorInvalidValue);
  for (cudaStream_t s : oat_emu::streams())
    if (s->capturing && s->mode != cudaStreamCaptureModeRelaxed) {
      oat_emu::capture_violation(s, "cudaMalloc");
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  *p = oat_emu::arena_alloc(n);
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* p) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  for (cudaStream_t s : oat_emu::streams())
    if (s->capturing && s->mode != cudaStreamCaptureModeRelaxed) {
      oat_emu::capture_violation(s, "cudaFree");
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  return oat_emu::arena_free(p) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

namespace {
std::set<void*>& pinned() {
  static std::set<void*> s;
  return s;
}
}  // namespace

cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!p) return fail(cudaErrorInvalidValue);
  *p = std::aligned_alloc(oat_emu::kAlign, oat_emu::round_up(n == 0 ? 1 : n, oat_emu::kAlign));
  if (!*p) return fail(cudaErrorMemoryAllocation);
  pinned().insert(*p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void* p) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!p) return cudaSuccess;
  if (!pinned().erase(p)) return fail(cudaErrorInvalidValue);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t s) {
  if (const cudaError_t e = oat_emu::check_copy(dst, src, n, kind)) return fail(e);
  if (n) enqueue(s, "cudaMemcpyAsync", [=] { std::memmove(dst, src, n); });
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (const cudaError_t e = oat_emu::sync_point(nullptr, "cudaMemcpy")) return e;
  return cudaMemcpyAsync(dst, src, n, kind, nullptr);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
  if (width > dpitch || width > spitch) return fail(cudaErrorInvalidPitchValue);
  if (width == 0 || height == 0) return cudaSuccess;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (const cudaError_t e = oat_emu::check_copy(dst, src, 1, kind)) return fail(e);
  if (oat_emu::is_device_pointer(dst) && !oat_emu::device_range(dst, dspan))
    return fail(cudaErrorInvalidValue);
  if (oat_emu::is_device_pointer(src) && !oat_emu::device_range(src, sspan))
    return fail(cudaErrorInvalidValue);
  enqueue(s, "cudaMemcpy2DAsync", [=] {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                   width);
  });
  return cudaSuccess;
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
  if (const cudaError_t e = oat_emu::sync_point(nullptr, "cudaMemcpy2D")) return e;
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, nullptr);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (!oat_emu::device_range(p, n)) return fail(cudaErrorInvalidValue);
  enqueue(s, "cudaMemsetAsync", [=] { std::memset(p, value, n); });
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t n) {
  if (const cudaError_t e = oat_emu::sync_point(nullptr, "cudaMemset")) return e;
  return cudaMemsetAsync(p, value, n, nullptr);
}

cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t s) {
  if (width > pitch) return fail(cudaErrorInvalidPitchValue);
  if (width == 0 || height == 0) return cudaSuccess;
  if (!oat_emu::device_range(p, pitch * (height - 1) + width)) return fail(cudaErrorInvalidValue);
  enqueue(s, "cudaMemset2DAsync", [=] {
    for (size_t r = 0; r < height; ++r) std::memset(static_cast<char*>(p) + r * pitch, value, width);
  });
  return cudaSuccess;
}

// ---- streams -------------------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!s) return fail(cudaErrorInvalidValue);
  *s = new CUstream_st;
  oat_emu::streams().insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!oat_emu::streams().erase(s)) return fail(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (!oat_emu::is_legacy(s) && !oat_emu::streams().count(s))
    return fail(cudaErrorInvalidResourceHandle);
  return oat_emu::sync_point(s, "cudaStreamSynchronize");
}

cudaError_t cudaStreamQuery(cudaStream_t s) { return oat_emu::sync_point(s, "cudaStreamQuery"); }

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  if (!fn) return fail(cudaErrorInvalidValue);
  oat_emu::enqueue_host(s, "cudaLaunchHostFunc", [fn, data] { fn(data); });
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (oat_emu::is_legacy(s)) return fail(cudaErrorStreamCaptureUnsupported);
  if (!oat_emu::streams().count(s)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capturing) return fail(cudaErrorIllegalState);
  s->capturing = true;
  s->mode = mode;
  s->invalidated = false;
  s->why.clear();
  s->ops.clear();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!graph) return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (oat_emu::is_legacy(s) || !s->capturing) return fail(cudaErrorIllegalState);
  s->capturing = false;
  std::vector<Op> ops = std::move(s->ops);
  s->ops.clear();
  if (s->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  *graph = new CUgraph_st{std::move(ops)};
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(oat_emu::g_mutex);
  if (!status) return fail(cudaErrorInvalidValue);
  if (oat_emu::is_legacy(s)) *status = cudaStreamCaptureStatusNone;
  else *status = !s->capturing ? cudaStreamCaptureStatusNone
                 : s->invalidated ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!exec || !graph) return fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return fail(cudaErrorInvalidValue);
  for (const Op& op : exec->ops) oat_emu::enqueue_op(s, op);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
  return cudaSuccess;
}

// ---- events (timings from the host clock) --------------------------------------------------
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  if (!e) return fail(cudaErrorInvalidValue);
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!e) return fail(cudaErrorInvalidResourceHandle);
  oat_emu::enqueue_host(s, "cudaEventRecord", [e] { e->t = std::chrono::steady_clock::now(); });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms || !a || !b) return fail(cudaErrorInvalidValue);
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}
