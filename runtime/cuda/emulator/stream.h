// The CUDA emulator's streams (internal to runtime/cuda/emulator/). Every piece of device work
// (a kernel launch, an async copy or memset, a cuBLAS or cuDNN call) is handed to enqueue() with the
// stream it was issued on: it runs at once (the emulator has one in-order "device" that finishes
// everything before the call returns), or, while that stream is capturing a graph, it is recorded
// into the graph instead and runs only when the graph is launched, as on a GPU. Host code that
// reads device memory after an async copy during a capture therefore sees stale data, as it would
// on a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace oat_emu {

// Runs `work` now, or records it when `stream` is capturing. `what` names the call for errors.
void enqueue(cudaStream_t stream, const char* what, std::function<void()> work);

// True while `stream` (or, for the legacy default stream, any stream) is capturing.
bool capturing(cudaStream_t stream);

// Marks the capture on `stream` invalidated by an operation that is not allowed while capturing
// (a synchronising call, ...), as the CUDA runtime does, and returns the error to report.
cudaError_t capture_violation(cudaStream_t stream, const char* what);

}  // namespace oat_emu

namespace oat_emu {

// Work that only host code does (cudaLaunchHostFunc): runs, or is recorded, like enqueue()'s
// work, but without access to device memory.
void enqueue_host(cudaStream_t stream, const char* what, std::function<void()> work);

// The caching allocator hands the block at `p` (an allocation's start) out again for `n` bytes:
// its first n bytes become NaN (0xFF) again, as unwritten memory is garbage on a GPU, and the
// bytes after them a redzone that device work must not write.
void set_extent(void* p, size_t n);

// (Re)installs the SIGSEGV handler that names a host access to device memory (installed when
// device memory is first used; a test harness that installs its own handlers may need it again).
void install_fault_handler();

// Sets the error cudaGetLastError reports next (a bad launch configuration, ...).
void record_error(cudaError_t e);

// Device memory is inaccessible to host code (PROT_NONE) except while device work runs; this
// scope opens it (nested scopes are fine). Anything enqueue() runs is already inside one.
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

// The emulated device allocation containing [p, p + n), as its base and size; false when
// [p, p + n) is not inside one (a host pointer, or past the end of an allocation).
bool device_range(const void* p, size_t n, const char** base = nullptr, size_t* size = nullptr);
bool is_device_pointer(const void* p);

}  // namespace oat_emu
