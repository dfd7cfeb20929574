#include "runtime/cuda/kernels/cudnn_desc.h"

#include <algorithm>
#include <limits>

#include "runtime/cuda/context.h"
#include "runtime/cuda/device.h"

namespace oat::cuda {

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw Error(cat("cuDNN: no kernels for dtype ", dtype_name(t)));
}

std::vector<int> cudnn_dims(const Shape& shape) {
  int64_t n = 1;
  for (int64_t v : shape) {
    n *= v;
    if (v < 0 || v > std::numeric_limits<int>::max() || n > std::numeric_limits<int>::max())
      throw Error(cat("cuDNN: a tensor of shape ", shape_str(shape), " is beyond what cuDNN's int ",
                      "dims and strides can address (at most 2^31 - 1 elements)"));
  }
  std::vector<int> d;
  for (int64_t v : shape) d.push_back(static_cast<int>(v));
  while (d.size() < 4) d.insert(d.begin() + 2, 1);
  return d;
}

std::vector<int> cudnn_packed_strides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size());
  int64_t s = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (s > std::numeric_limits<int>::max())
      throw Error(cat("cuDNN: a packed stride of dims ", shape_str(Shape(dims.begin(), dims.end())),
                      " does not fit an int"));
    strides[i] = static_cast<int>(s);
    s *= dims[i];
  }
  return strides;
}

void TensorDesc::set(DType t, const Shape& shape) {
  const std::vector<int> dims = cudnn_dims(shape);
  const std::vector<int> strides = cudnn_packed_strides(dims);
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(d_, cudnn_type(t), static_cast<int>(dims.size()),
                                         dims.data(), strides.data()));
  bytes_ = static_cast<size_t>(numel(shape)) * dtype_size(t);
}

void FilterDesc::set(DType t, const Shape& shape) {
  const std::vector<int> dims = cudnn_dims(shape);
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(d_, cudnn_type(t), CUDNN_TENSOR_NCHW,
                                         static_cast<int>(dims.size()), dims.data()));
  bytes_ = static_cast<size_t>(numel(shape)) * dtype_size(t);
}

void ConvDesc::set(DType t, const std::vector<int>& pad, const std::vector<int>& stride,
                   const std::vector<int>& dil, int64_t group) {
  CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d_, static_cast<int>(pad.size()), pad.data(),
                                              stride.data(), dil.data(), CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_, static_cast<int>(group)));
  math_ = ranking_math(t);
  CUDNN_CHECK(cudnnSetConvolutionMathType(d_, math_));
  t_ = t;
}

cudnnMathType_t ranking_math(DType t) {
  return t == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

int pick_conv_algo(const std::vector<ConvAlgoCandidate>& c, DType t) {
  // F32 stays true FP32: CUDNN_TENSOR_OP_MATH(_ALLOW_CONVERSION) would run it as TF32.
  auto allowed = [&](const ConvAlgoCandidate& a) {
    return a.status == CUDNN_STATUS_SUCCESS &&
           (t != DType::F32 || a.math == CUDNN_FMA_MATH || a.math == CUDNN_DEFAULT_MATH);
  };
  for (size_t i = 0; i < c.size(); ++i)
    if (allowed(c[i]) && c[i].memory <= kConvWorkspaceCap) return static_cast<int>(i);
  for (size_t i = 0; i < c.size(); ++i)
    if (allowed(c[i])) return static_cast<int>(i);
  return -1;
}

cudnnMathType_t run_math(DType t, cudnnMathType_t ranked) {
  return t == DType::F32 ? CUDNN_FMA_MATH : ranked;
}

namespace {

constexpr int kAlgoCandidates = 8;

// Device memory for a timed search (cudnnFind*AlgorithmEx runs every candidate): scratch
// operands (the search overwrites its output; the inputs' values do not matter) and a workspace
// of `ws_bytes` (the most any algorithm asks for, at most kConvWorkspaceCap, as PyTorch sizes
// its benchmark workspace), or a quarter of it and so on when that much is not free.
struct SearchBuffers {
  Tensor a, b, out, ws;
  size_t ws_bytes = 0;
};
SearchBuffers search_buffers(const KernelContext& ctx, size_t a, size_t b, size_t out,
                             size_t ws_bytes) {
  CudaContext& cc = cuda_context(ctx);
  SearchBuffers s{cc.scratch(a), cc.scratch(b), cc.scratch(out), Tensor(), 0};
  for (size_t bytes = ws_bytes; bytes > 0; bytes = bytes >= (size_t{64} << 20) ? bytes / 4 : 0) {
    try {
      s.ws = cc.scratch(bytes);
      s.ws_bytes = bytes;
      break;
    } catch (const Error&) {  // out of device memory: try a quarter
    }
  }
  return s;
}

int algo_count(cudnnConvolutionFwdAlgo_t) { return CUDNN_CONVOLUTION_FWD_ALGO_COUNT; }
int algo_count(cudnnConvolutionBwdDataAlgo_t) { return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; }
int algo_count(cudnnConvolutionBwdFilterAlgo_t) { return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; }

// The largest workspace any algorithm of the direction asks for under the current math type
// (those that do not apply answer an error and are skipped), at most kConvWorkspaceCap.
template <class Algo, class Workspace>
size_t largest_workspace(Workspace workspace) {
  size_t most = 0;
  for (int a = 0; a < algo_count(Algo{}); ++a) {
    size_t bytes = 0;
    if (workspace(static_cast<Algo>(a), &bytes) == CUDNN_STATUS_SUCCESS)
      most = std::max(most, bytes);
  }
  return std::min(most, kConvWorkspaceCap);
}

// One direction's algorithm: cuDNN ranks candidates under the dtype's math type (`rank(perf,
// &n)`: heuristics, or `find(perf, &n, workspace bytes)`: timed on the device under
// --cudnn-benchmark, never while a CUDA graph is being captured), pick_conv_algo chooses, and the workspace is sized
// under the pick's run_math (its own math type; FMA for F32) (`workspace(algo, &bytes)`), which
// the convolution call then runs with.
template <class Perf, class Rank, class Find, class Workspace>
auto plan_algo(const KernelContext& ctx, ConvDesc& conv, const char* what, Rank rank, Find find,
               Workspace workspace) {
  Perf perf[kAlgoCandidates];
  int n = 0;
  conv.with_math(ranking_math(conv.dtype()));  // not the last pick's
  using Algo = decltype(perf[0].algo);
  if (cudnn_benchmark() && !cuda_context(ctx).capturing())
    CUDNN_CHECK(find(perf, &n, largest_workspace<Algo>(workspace)));
  else
    CUDNN_CHECK(rank(perf, &n));
  std::vector<ConvAlgoCandidate> c;
  for (int i = 0; i < n; ++i) c.push_back({perf[i].status, perf[i].mathType, perf[i].memory});
  const int i = pick_conv_algo(c, conv.dtype());
  if (i < 0) ctx.fail(cat("cuDNN has no ", what, " algorithm for this convolution"));
  ConvAlgo<Algo> a;
  a.algo = perf[i].algo;
  a.math = run_math(conv.dtype(), perf[i].mathType);
  conv.with_math(a.math);
  CUDNN_CHECK(workspace(a.algo, &a.workspace));
  return a;
}

}  // namespace

ConvAlgo<cudnnConvolutionFwdAlgo_t> forward_algo(const KernelContext& ctx, cudnnHandle_t h,
                                                 const TensorDesc& x, const FilterDesc& w,
                                                 ConvDesc& conv, const TensorDesc& y) {
  return plan_algo<cudnnConvolutionFwdAlgoPerf_t>(
      ctx, conv, "forward",
      [&](cudnnConvolutionFwdAlgoPerf_t* perf, int* n) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h, x.get(), w.get(), conv.get(), y.get(),
                                                      kAlgoCandidates, n, perf);
      },
      [&](cudnnConvolutionFwdAlgoPerf_t* perf, int* n, size_t ws_bytes) {
        SearchBuffers s = search_buffers(ctx, x.bytes(), w.bytes(), y.bytes(), ws_bytes);
        return cudnnFindConvolutionForwardAlgorithmEx(
            h, x.get(), s.a.raw_data(), w.get(), s.b.raw_data(), conv.get(), y.get(),
            s.out.raw_data(), kAlgoCandidates, n, perf, s.ws.raw_data(), s.ws_bytes);
      },
      [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, x.get(), w.get(), conv.get(), y.get(),
                                                       algo, bytes);
      });
}

ConvAlgo<cudnnConvolutionBwdDataAlgo_t> backward_data_algo(const KernelContext& ctx,
                                                           cudnnHandle_t h, const FilterDesc& w,
                                                           const TensorDesc& dy,
                                                           ConvDesc& conv,
                                                           const TensorDesc& dx) {
  return plan_algo<cudnnConvolutionBwdDataAlgoPerf_t>(
      ctx, conv, "backward-data",
      [&](cudnnConvolutionBwdDataAlgoPerf_t* perf, int* n) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w.get(), dy.get(), conv.get(),
                                                           dx.get(), kAlgoCandidates, n, perf);
      },
      [&](cudnnConvolutionBwdDataAlgoPerf_t* perf, int* n, size_t ws_bytes) {
        SearchBuffers s = search_buffers(ctx, w.bytes(), dy.bytes(), dx.bytes(), ws_bytes);
        return cudnnFindConvolutionBackwardDataAlgorithmEx(
            h, w.get(), s.a.raw_data(), dy.get(), s.b.raw_data(), conv.get(), dx.get(),
            s.out.raw_data(), kAlgoCandidates, n, perf, s.ws.raw_data(), s.ws_bytes);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, w.get(), dy.get(), conv.get(),
                                                            dx.get(), algo, bytes);
      });
}

ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> backward_filter_algo(const KernelContext& ctx,
                                                               cudnnHandle_t h, const TensorDesc& x,
                                                               const TensorDesc& dy,
                                                               ConvDesc& conv,
                                                               const FilterDesc& dw) {
  return plan_algo<cudnnConvolutionBwdFilterAlgoPerf_t>(
      ctx, conv, "backward-filter",
      [&](cudnnConvolutionBwdFilterAlgoPerf_t* perf, int* n) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x.get(), dy.get(), conv.get(),
                                                             dw.get(), kAlgoCandidates, n, perf);
      },
      [&](cudnnConvolutionBwdFilterAlgoPerf_t* perf, int* n, size_t ws_bytes) {
        SearchBuffers s = search_buffers(ctx, x.bytes(), dy.bytes(), dw.bytes(), ws_bytes);
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, x.get(), s.a.raw_data(), dy.get(), s.b.raw_data(), conv.get(), dw.get(),
            s.out.raw_data(), kAlgoCandidates, n, perf, s.ws.raw_data(), s.ws_bytes);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x.get(), dy.get(), conv.get(),
                                                              dw.get(), algo, bytes);
      });
}

}  // namespace oat::cuda
