#include "runtime/cuda/context.h"

#include <atomic>
#include <cstring>
#include <optional>

#include "runtime/cpu/kernels/cast_args.h"
#include "runtime/cpu/kernels/random_philox.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/kernels/optimizer_impl.h"
#include "runtime/registry.h"
#include "runtime/sequence_ops.h"
#include "runtime/subgraph.h"

namespace oat::cuda {

namespace {
std::atomic<uint64_t> g_next_stream_id{1};
}  // namespace

CudaContext::CudaContext() {
  require_device();
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  id_ = g_next_stream_id++;
  alloc_id_ = id_;
}

CudaContext::~CudaContext() {
  // Nothing may throw here: failures only leak.
  abort_capture();
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

void CudaContext::enter() { saved_.push_back(set_current_stream({stream_, alloc_id_})); }

void CudaContext::set_alloc_id(uint64_t id) {
  alloc_id_ = id;
  if (!saved_.empty()) set_current_stream({stream_, alloc_id_});  // inside enter(): follow
}

void CudaContext::leave() {
  if (saved_.empty()) return;
  set_current_stream(saved_.back());
  saved_.pop_back();
}

void CudaContext::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Tensor CudaContext::upload(const Tensor& host) {
  if (host.device() == Device::CUDA) return host;
  CurrentStream old = set_current_stream({stream_, alloc_id_});
  Tensor d(host.dtype(), host.shape(), Device::CUDA);
  set_current_stream(old);
  upload_bytes(d.raw_data(), host.raw_data(), host.nbytes());
  return d;
}

void CudaContext::upload_bytes(void* dst, const void* src, size_t n) {
  if (n == 0) return;
  if (capturing_) {
    // A captured copy must read memory that still holds the same bytes at every replay, and
    // pageable memory cannot be captured: a pinned copy made now, freed with the graph.
    void* pinned = nullptr;
    CUDA_CHECK(cudaMallocHost(&pinned, n));
    capture_pinned_.push_back(pinned);
    std::memcpy(pinned, src, n);
    src = pinned;
  }
  // Pageable host memory: cudaMemcpyAsync stages it before returning, so `src` may die after.
  CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream_));
  ++uploads_;
}

Tensor CudaContext::download(const Tensor& t) {
  if (t.device() == Device::CPU) return t;
  if (capturing_)
    throw Error(cat("a ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                    " device value is read on the host while a CUDA graph is being captured "
                    "(a host synchronisation inside the step): this step cannot be captured"));
  Tensor h(t.dtype(), t.shape());
  if (t.nbytes()) {
    CUDA_CHECK(cudaMemcpyAsync(h.raw_data(), t.raw_data(), t.nbytes(), cudaMemcpyDeviceToHost,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  return h;
}

void CudaContext::copy_into(const Tensor& src, Tensor& dst) {
  if (dst.device() != Device::CUDA)
    throw Error(cat("copy_into: the destination is on ", device_name(dst.device()), ", not cuda"));
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
    throw Error(cat("copy_into: ", dtype_name(src.dtype()), " ", shape_str(src.shape()),
                    " into ", dtype_name(dst.dtype()), " ", shape_str(dst.shape())));
  if (src.device() == Device::CPU) {
    upload_bytes(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  if (src.nbytes() && src.raw_data() != dst.raw_data())
    CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(),
                               cudaMemcpyDeviceToDevice, stream_));
}

void CudaContext::amp_step(DeviceAmpState& st, const Tensor* found_inf, const DeviceAmpRule& r) {
  auto want = [](const Tensor& t, DType dt, int64_t n, const char* what) {
    if (t.device() != Device::CUDA || t.dtype() != dt || t.numel() != n)
      throw Error(cat("amp_step: ", what, " must be ", n, " ", dtype_name(dt), " on cuda, got ",
                      dtype_name(t.dtype()), " ", shape_str(t.shape()), " on ",
                      device_name(t.device())));
  };
  want(st.scale, DType::F32, 1, "scale");
  want(st.inv_scale, DType::F32, 1, "inv_scale");
  want(st.step, DType::I64, 1, "step");
  want(st.counters, DType::I64, 3, "counters");
  if (found_inf) want(*found_inf, DType::Bool, 1, "found_inf");
  if (r.check && !found_inf) throw Error("amp_step: the rule checks steps but found_inf is missing");
  AmpStepRule k{};
  k.check = r.check;
  k.dynamic = r.dynamic;
  k.growth = r.growth;
  k.backoff = r.backoff;
  k.min_scale = r.min_scale;
  k.max_scale = r.max_scale;
  k.interval = r.interval;
  k.hysteresis = r.hysteresis;
  launch_amp_step(st.scale.data<float>(), st.inv_scale.data<float>(), st.step.data<int64_t>(),
                  st.counters.data<int64_t>(), found_inf ? found_inf->data<bool>() : nullptr, k,
                  stream_);
}

namespace {

// A CUDA graph and what it keeps: its private allocator pool and the pinned host copies.
class CudaGraph final : public CapturedGraph {
 public:
  CudaGraph(cudaStream_t s, cudaGraph_t g, cudaGraphExec_t e, uint64_t pool,
            std::vector<void*> pinned)
      : stream_(s), graph_(g), exec_(e), pool_(pool), pinned_(std::move(pinned)) {}
  ~CudaGraph() override {
    cudaStreamSynchronize(stream_);  // no replay in flight reads what is freed below
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    for (void* p : pinned_) cudaFreeHost(p);
    device_allocator().retire_stream(pool_);
  }
  void replay() override { CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  uint64_t pool_;
  std::vector<void*> pinned_;
};

}  // namespace

void CudaContext::begin_capture() {
  if (capturing_) throw Error("begin_capture: a CUDA graph is already being captured");
  capture_pool_ = g_next_stream_id++;
  device_allocator().reserve_stream(capture_pool_);
  // Relaxed: the caching allocator may still call cudaMalloc and the uploads cudaMallocHost
  // while the stream records.
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  capturing_ = true;
  set_alloc_id(capture_pool_);
}

void CudaContext::release_capture_resources() {
  for (void* p : capture_pinned_) cudaFreeHost(p);
  capture_pinned_.clear();
  device_allocator().retire_stream(capture_pool_);
}

std::unique_ptr<CapturedGraph> CudaContext::end_capture() {
  if (!capturing_) throw Error("end_capture: no CUDA graph is being captured");
  capturing_ = false;
  set_alloc_id(id_);
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &g);
  cudaGraphExec_t exec = nullptr;
  cudaError_t ie = cudaSuccess;
  if (e == cudaSuccess) ie = cudaGraphInstantiate(&exec, g, 0);
  if (e != cudaSuccess || ie != cudaSuccess) {
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    release_capture_resources();
    throw_call_error(e != cudaSuccess ? "cudaStreamEndCapture" : "cudaGraphInstantiate", __FILE__,
                     __LINE__, cudaGetErrorString(e != cudaSuccess ? e : ie));
  }
  auto r = std::make_unique<CudaGraph>(stream_, g, exec, capture_pool_, std::move(capture_pinned_));
  capture_pinned_.clear();
  return r;
}

void CudaContext::abort_capture() {
  if (!capturing_) return;
  capturing_ = false;
  set_alloc_id(id_);
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(stream_, &g);  // ends the (possibly invalidated) capture; never throws
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
  release_capture_resources();
}

bool reads_on_host(OpId op, int i) {
  switch (op) {
    case OpId::Reshape: case OpId::Expand: case OpId::Tile: case OpId::Squeeze:
    case OpId::Unsqueeze: case OpId::Split: case OpId::CumSum: case OpId::CumSumGrad:
    case OpId::SumToShape:
    case OpId::ReduceMean: case OpId::ReduceSum: case OpId::ReduceMax: case OpId::ReduceMin:
    case OpId::ReduceProd: case OpId::ReduceSumSquare: case OpId::ReduceL2: case OpId::ReduceL1:
    case OpId::ReduceLogSum: case OpId::ReduceLogSumExp:
      return i == 1;
    case OpId::Slice: return i >= 1;
    case OpId::ReduceGrad: case OpId::SliceGrad: case OpId::ConcatGrad: return i >= 1;
    case OpId::TileGrad: return i == 1;
    case OpId::GatherGrad: return i == 1 || i == 2;  // shape; indices checked on the host
    case OpId::GatherElementsGrad: return i == 1 || i == 2;  // as GatherGrad
    case OpId::PadGrad: return i >= 1;                         // shape, pads, axes
    case OpId::ReduceXYGrad: return i == 3;                    // axes
    case OpId::DropoutGrad: return i >= 2;
    // loss targets: range-checked on the host, then uploaded by the kernel
    case OpId::SoftmaxCrossEntropyLoss: case OpId::NegativeLogLikelihoodLoss: return i == 1;
    case OpId::SoftmaxCrossEntropyLossGrad: return i == 2;
    case OpId::NegativeLogLikelihoodLossGrad: return i == 1 || i == 2;
    case OpId::ClipGrad: return i >= 2;
    case OpId::AveragePoolGrad: case OpId::GlobalAveragePoolGrad: return i == 1;
    case OpId::Gather:
    case OpId::GatherElements:
    case OpId::ScatterReduce:
      return i == 1;  // checked on the host when it is there, then uploaded
    case OpId::Pad: return i >= 1;
    case OpId::Resize: case OpId::Upsample: case OpId::ResizeGrad:
      return i >= 1;  // roi, scales, sizes; ResizeGrad's shape(X)
    case OpId::Trilu: return i == 1;  // k
    case OpId::RoiAlign: return i == 2;   // batch_indices, range-checked on the host
    case OpId::RoiAlignGrad: return i == 1 || i == 3;  // shape(X), batch_indices
    case OpId::MaxUnpool: return i >= 1;  // I checked on the host when it is there; output_shape
    case OpId::TopK: return i == 1;   // K
    case OpId::DFT: return i >= 1;        // dft_length, axis (opset 20)
    case OpId::DFTGrad: return i >= 2;    // dft_length, axis
    case OpId::STFT: return i == 1 || i == 3;      // frame_step, frame_length
    case OpId::STFTGrad: return i == 2 || i == 4;  // frame_step, frame_length
    case OpId::Clip: return i >= 1;
    case OpId::Dropout: return i >= 1;
    case OpId::ConstantOfShape: case OpId::Range: return true;
    // SGDUpdate / AdamUpdate read lr and step on the device (staged when fed from the host).
    case OpId::GlobalNormClip: return false;            // max_norm is read on the device
    default: return false;
  }
}

namespace {

// Ops that always run on the host in a CUDA executor, their device inputs downloaded by the
// Executor (one synchronisation; a CUDA graph capture fails naming the node): NonMaxSuppression,
// Compress, Unique and NonZero, whose output's length depends on the input values (a device kernel would
// have to synchronise to size it anyway; they sit at the end of detection graphs or in index
// arithmetic), and Det (small batched matrices, an LU per matrix; no device kernel yet). See
// runtime/cuda/README.md, "Host-placed ops".
// The random generators (RandomNormal, RandomUniform, their *Like forms with a 'seed' or a float64
// output, Bernoulli, Multinomial) also run on the host, with the CPU kernel's per-node generator
// (runtime/cpu/kernels/random.cc; unseeded float ones have a device kernel, device_random below):
// the same stream as on the CPU, the draw uploaded (a device input is downloaded first, as for
// the ops above; the *Like ops only read its shape). A CUDA graph would replay the draw made at capture time at every step (an
// upload captures a pinned copy of the host values), so a step with one is not captured:
// placement() fails the capture naming the node, and the Trainer runs that step eagerly.
bool random_op(OpId op) {
  switch (op) {
    case OpId::RandomNormal: case OpId::RandomUniform: case OpId::RandomNormalLike:
    case OpId::RandomUniformLike: case OpId::Bernoulli: case OpId::Multinomial:
      return true;
    default: return false;
  }
}

// Unseeded RandomNormal / RandomUniform (+Like) with an F32, F16 or BF16 output compute their
// Philox stream on the device (kernels/random.cc): captured like any kernel.
bool device_random(const Node& node, const std::vector<const Tensor*>& inputs) {
  const bool like = node.op == OpId::RandomNormalLike || node.op == OpId::RandomUniformLike;
  if (!like && node.op != OpId::RandomNormal && node.op != OpId::RandomUniform) return false;
  if (!cpu::random_uses_philox(node)) return false;
  const Tensor* x = like && !inputs.empty() ? inputs[0] : nullptr;
  if (like && !x) return false;
  DType dt;
  try {
    dt = cpu::random_float_dtype(node, x ? x->dtype() : DType::Undefined);
  } catch (const Error&) {
    return false;  // an unknown 'dtype': the CPU kernel reports it
  }
  return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16;
}

bool host_placed(OpId op) {
  // ai.onnx.ml (classical ML: trees, linear models, encoders) has CPU kernels only.
  if (is_ml_op(op)) return true;
  switch (op) {
    case OpId::NonMaxSuppression: case OpId::Compress: case OpId::Unique: case OpId::Det:
    case OpId::NonZero:
      return true;
    // Signal processing (opset 17): the window and mel-filter generators read host scalars only
    // (as Range). DFT, STFT and their adjoints have device kernels (kernels/signal.cc).
    case OpId::HannWindow: case OpId::HammingWindow: case OpId::BlackmanWindow:
    case OpId::MelWeightMatrix:
      return true;
    default: return random_op(op);
  }
}

}  // namespace

Device CudaContext::placement(const Node& node, const std::vector<const Tensor*>& inputs) const {
  // Control flow (If, Loop, Scan) runs on the host: the CPU kernel runs each subgraph through a
  // CPU Executor, fed the node's inputs (device ones downloaded by the Executor: a
  // synchronisation per call), and device nodes after it upload what they read. A subgraph may
  // hold anything (a draw, a host read of its own), so a step with one is not captured.
  if (node_has_subgraph(node)) {
    if (capturing_)
      throw Error(cat(node.describe(),
                      ": control flow runs its subgraphs on the host, which a "
                      "CUDA graph cannot replay: this step cannot be captured"));
    return Device::CPU;
  }
  // Sequences and optionals live on the host (runtime/tensor.h): their ops, and any node given
  // one (Identity, If's outputs passed on), run there.
  if (is_sequence_op(node.op)) return Device::CPU;
  for (const Tensor* t : inputs)
    if (t && !t->is_tensor()) return Device::CPU;
  const bool on_device_random = device_random(node, inputs);
  if (random_op(node.op) && !on_device_random && capturing_)
    throw Error(cat(node.describe(), ": draws random numbers on the host; a CUDA graph would replay "
                    "the captured draw at every step: this step cannot be captured"));
  if (on_device_random) return Device::CUDA;
  if (host_placed(node.op)) return Device::CPU;
  // int16, uint16, uint32 and uint64 have no device element type (kernels/launch.h ElemType):
  // nodes that read or make them run on the host (Cast's target counts).
  for (const Tensor* t : inputs)
    if (t && !has_device_type(t->dtype())) return Device::CPU;
  if (const Attribute* to = node.op == OpId::Cast ? node.attr("to") : nullptr)
    if (const std::optional<DType> d = cpu::cast_to_dtype(*to); d && !has_device_type(*d))
      return Device::CPU;
  // Integer and bool nodes whose op has no CUDA kernel in that dtype (index arithmetic the device
  // kernels, float-only, do not cover: OneHot's wrap of negative indices is a Less on int64 ids)
  // run on the host, their device inputs downloaded: exact either way, as ONNX Runtime's CPU
  // fallback. A float node without a device kernel still fails by name.
  const DType key = kernel_dtype_key(node, inputs);
  if (key != kAnyDType && !is_floating(key) &&
      !default_registry().supports(node.op, Device::CUDA, key) &&
      default_registry().supports(node.op, Device::CPU, key))
    return Device::CPU;
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
  CudaContext& cc = cuda_context(ctx);
  if (cc.capturing())
    ctx.fail(cat("reads input ", i, " (", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                 ", computed on the device) on the host: a synchronisation that a CUDA graph "
                 "cannot capture"));
  return cc.download(t);
}

std::unique_ptr<DeviceContext> make_context() { return std::make_unique<CudaContext>(); }

}  // namespace oat::cuda
