// CUDA backend entry points: the seam the rest of the code calls. Every function here exists in
// every build; without the backend (runtime/cuda_stub.cc) they answer "not compiled" or throw.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace oat {
class Storage;
class DeviceContext;
class KernelRegistry;
}  // namespace oat

namespace oat::cuda {

// True when this build has the CUDA backend compiled in.
bool compiled();
// Number of CUDA devices that answer (0 without a driver or GPU, never throws).
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" or the reason there is none.
std::string describe_device(int index = 0);
// Throws Error("no CUDA device: <reason>") unless a device answers.
void require_device();

// Device memory for a Device::CUDA tensor, from the caching allocator on the current thread's
// stream (see context.h). Throws Error without the backend.
std::shared_ptr<Storage> allocate_storage(size_t bytes);
// Byte copy between devices (dst_cuda / src_cuda say which side is device memory); synchronous.
void copy_bytes(void* dst, bool dst_cuda, const void* src, bool src_cuda, size_t bytes);
// A per-executor context: its own stream, cuBLAS and cuDNN handles. Throws Error when no device.
std::unique_ptr<DeviceContext> make_context();
// Adds the CUDA kernels to `r` (nothing without the backend).
void register_kernels(KernelRegistry& r);

// How a convolution's cuDNN algorithms are chosen, once per shape (process-wide, read when a
// shape is first planned): false (default) ranks them by cuDNN's heuristics
// (cudnnGet*Algorithm_v7, PyTorch's default); true times them on the device
// (cudnnFind*AlgorithmEx: PyTorch's torch.backends.cudnn.benchmark = True, ONNX Runtime's
// cudnn_conv_algo_search EXHAUSTIVE). The CLI's --cudnn-benchmark sets it.
inline std::atomic<bool>& cudnn_benchmark_flag() {
  static std::atomic<bool> on{false};
  return on;
}
inline void set_cudnn_benchmark(bool on) { cudnn_benchmark_flag() = on; }
inline bool cudnn_benchmark() { return cudnn_benchmark_flag(); }

}  // namespace oat::cuda
