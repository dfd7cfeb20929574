#include "runtime/cuda/context.h"

#include <atomic>

#include "runtime/cuda/device.h"

namespace oat::cuda {

namespace {
std::atomic<uint64_t> g_next_stream_id{1};
}  // namespace

CudaContext::CudaContext() {
  require_device();
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  id_ = g_next_stream_id++;
}

CudaContext::~CudaContext() {
  // Nothing may throw here: failures only leak.
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  device_allocator().retire_stream(id_);
}

cublasHandle_t CudaContext::cublas() {
  if (!cublas_) {
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Tensor cores for F16/BF16 GEMMs; F32 GEMMs stay true FP32 (CUBLAS_COMPUTE_32F, no TF32) so
    // they match the CPU reference.
    CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  return cublas_;
}

cudnnHandle_t CudaContext::cudnn() {
  if (!cudnn_) {
    CUDNN_CHECK(cudnnCreate(&cudnn_));
    CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
  }
  return cudnn_;
}

Tensor CudaContext::scratch(size_t bytes) {
  return Tensor(DType::U8, {static_cast<int64_t>(bytes)}, Device::CUDA);
}

void CudaContext::enter() { saved_.push_back(set_current_stream({stream_, id_})); }

void CudaContext::leave() {
  if (saved_.empty()) return;
  set_current_stream(saved_.back());
  saved_.pop_back();
}

void CudaContext::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Tensor CudaContext::upload(const Tensor& host) {
  if (host.device() == Device::CUDA) return host;
  CurrentStream old = set_current_stream({stream_, id_});
  Tensor d(host.dtype(), host.shape(), Device::CUDA);
  set_current_stream(old);
  // Pageable host memory: cudaMemcpyAsync stages it before returning, so `host` may die after.
  if (host.nbytes())
    CUDA_CHECK(cudaMemcpyAsync(d.raw_data(), host.raw_data(), host.nbytes(),
                               cudaMemcpyHostToDevice, stream_));
  return d;
}

Tensor CudaContext::download(const Tensor& t) {
  if (t.device() == Device::CPU) return t;
  Tensor h(t.dtype(), t.shape());
  if (t.nbytes()) {
    CUDA_CHECK(cudaMemcpyAsync(h.raw_data(), t.raw_data(), t.nbytes(), cudaMemcpyDeviceToHost,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  return h;
}

bool reads_on_host(OpId op, int i) {
  switch (op) {
    case OpId::Reshape: case OpId::Expand: case OpId::Tile: case OpId::Squeeze:
    case OpId::Unsqueeze: case OpId::Split: case OpId::CumSum: case OpId::SumToShape:
    case OpId::ReduceMean: case OpId::ReduceSum: case OpId::ReduceMax: case OpId::ReduceMin:
    case OpId::ReduceProd: case OpId::ReduceSumSquare: case OpId::ReduceL2: case OpId::ReduceL1:
    case OpId::ReduceLogSum: case OpId::ReduceLogSumExp:
      return i == 1;
    case OpId::Slice: return i >= 1;
    case OpId::ReduceGrad: case OpId::SliceGrad: case OpId::ConcatGrad: return i >= 1;
    case OpId::TileGrad: return i == 1;
    case OpId::GatherGrad: return i == 1 || i == 2;  // shape; indices checked on the host
    case OpId::DropoutGrad: return i >= 2;
    // loss targets: range-checked on the host, then uploaded by the kernel
    case OpId::SoftmaxCrossEntropyLoss: case OpId::NegativeLogLikelihoodLoss: return i == 1;
    case OpId::SoftmaxCrossEntropyLossGrad: return i == 2;
    case OpId::NegativeLogLikelihoodLossGrad: return i == 1 || i == 2;
    case OpId::ClipGrad: return i >= 2;
    case OpId::AveragePoolGrad: case OpId::GlobalAveragePoolGrad: return i == 1;
    case OpId::Gather: return i == 1;  // checked on the host when it is there, then uploaded
    case OpId::Pad: return i >= 1;
    case OpId::Clip: return i >= 1;
    case OpId::Dropout: return i >= 1;
    case OpId::ConstantOfShape: case OpId::Range: return true;
    case OpId::SGDUpdate: return i == 3;                 // lr; the skip flag stays on the device
    case OpId::AdamUpdate: return i == 4 || i == 5;     // lr, step
    case OpId::GlobalNormClip: return false;            // max_norm is read on the device
    default: return false;
  }
}

Device CudaContext::placement(const Node& node, const std::vector<const Tensor*>& inputs) const {
  // The host when every input is already there and is integer (shape arithmetic) or a scalar
  // (a learning-rate product, Range's bounds): the device would only add copies.
  bool any = false;
  for (const Tensor* t : inputs) {
    if (!t) continue;
    any = true;
    if (t->device() != Device::CPU || (is_floating(t->dtype()) && t->numel() > 1))
      return Device::CUDA;
  }
  return any || node.op == OpId::Constant || node.op == OpId::ConstantOfShape ? Device::CPU
                                                                              : Device::CUDA;
}

void CudaContext::stage_inputs(const Node& node, std::vector<const Tensor*>& inputs,
                               std::vector<Tensor>& staged) {
  staged.reserve(inputs.size());  // pointers into `staged` must stay valid
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t || t->device() == Device::CUDA || reads_on_host(node.op, static_cast<int>(i))) continue;
    staged.push_back(upload(*t));
    inputs[i] = &staged.back();
  }
}

CudaContext& cuda_context(const KernelContext& ctx) {
  auto* c = dynamic_cast<CudaContext*>(ctx.device_context());
  if (!c) ctx.fail("a CUDA kernel ran without a CUDA context (run it through an Executor)");
  return *c;
}

Tensor host_input(const KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.device() == Device::CPU) return t;
  return cuda_context(ctx).download(t);
}

std::unique_ptr<DeviceContext> make_context() { return std::make_unique<CudaContext>(); }

}  // namespace oat::cuda
