// CudaContext: the per-executor device state. Each executor on CUDA owns one stream; every kernel
// of that executor, its copies and its allocations are ordered on it, so no kernel waits on the
// host until run() downloads the outputs. cuBLAS and cuDNN handles are created on first use and
// bound to the stream.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/check.h"
#include "runtime/cuda/memory.h"
#include "runtime/kernel.h"

namespace oat::cuda {

// Whether the device stores `t` (kernels/launch.h ElemType mirrors DType's first nine: F32 ...
// Bool). int16, uint16, uint32 and uint64 have no device element type: nodes that read or make
// them run on the host (CudaContext::placement). Undefined (no tensor yet) counts as stored.
inline bool has_device_type(DType t) {
  return t == DType::Undefined || static_cast<int>(t) <= static_cast<int>(DType::Bool);
}

class CudaContext final : public DeviceContext {
 public:
  CudaContext();  // throws Error "no CUDA device: ..." when none answers
  ~CudaContext() override;
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  Device device() const override { return Device::CUDA; }
  Tensor upload(const Tensor& host) override;
  Tensor download(const Tensor& t) override;
  Device placement(const Node& node, const std::vector<const Tensor*>& inputs) const override;
  void stage_inputs(const Node& node, std::vector<const Tensor*>& inputs,
                    std::vector<Tensor>& staged) override;
  void enter() override;
  void leave() override;
  void synchronize() override;
  void copy_into(const Tensor& src, Tensor& dst) override;
  void amp_step(DeviceAmpState& state, const Tensor* found_inf, const DeviceAmpRule& rule) override;
  void begin_capture() override;
  std::unique_ptr<CapturedGraph> end_capture() override;
  void abort_capture() override;

  // Whether a CUDA graph is being captured on this context's stream.
  bool capturing() const { return capturing_; }
  // n bytes of host memory into device memory at dst, ordered on the stream; the host buffer may
  // be reused at once (pageable: staged by the driver; during capture: copied into pinned memory
  // kept with the graph).
  void upload_bytes(void* dst, const void* src, size_t n);
  // Host-to-device copies queued so far by upload/upload_bytes (tests count them).
  uint64_t uploads() const { return uploads_; }

  cudaStream_t stream() const { return stream_; }
  uint64_t stream_id() const { return id_; }
  cublasHandle_t cublas();
  cudnnHandle_t cudnn();
  // Device scratch (cuDNN workspaces) from the caching allocator; keep the tensor alive until the
  // launch that uses it is queued (later reuse is ordered on the same stream).
  Tensor scratch(size_t bytes);

 private:
  cudaStream_t stream_ = nullptr;
  uint64_t id_ = 0;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::vector<CurrentStream> saved_;  // enter() nesting
  // Allocations are keyed by alloc_id_: id_, or during a capture the graph's private pool.
  uint64_t alloc_id_ = 0;
  bool capturing_ = false;
  uint64_t capture_pool_ = 0;
  std::vector<void*> capture_pinned_;  // pinned host copies of data uploaded during a capture
  uint64_t uploads_ = 0;
  void set_alloc_id(uint64_t id);
  void release_capture_resources();
};

// Whether input `index` of `op` is read on the host by its CUDA kernel (shapes, axes, starts,
// scalars like Clip's bounds and the optimizer's learning rate), so it is not uploaded.
bool reads_on_host(OpId op, int index);

// The CUDA context of a kernel's executor; throws naming the node when there is none.
CudaContext& cuda_context(const KernelContext& ctx);
// Input i as a host tensor (downloaded, synchronising, when a kernel produced it on the device).
Tensor host_input(const KernelContext& ctx, int i);

}  // namespace oat::cuda
