#include "runtime/cuda/kernels/cudnn_desc.h"

#include <limits>

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
}

void FilterDesc::set(DType t, const Shape& shape) {
  const std::vector<int> dims = cudnn_dims(shape);
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(d_, cudnn_type(t), CUDNN_TENSOR_NCHW,
                                         static_cast<int>(dims.size()), dims.data()));
}

void ConvDesc::set(DType t, const std::vector<int>& pad, const std::vector<int>& stride,
                   const std::vector<int>& dil, int64_t group) {
  CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d_, static_cast<int>(pad.size()), pad.data(),
                                              stride.data(), dil.data(), CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_, static_cast<int>(group)));
  CUDNN_CHECK(
      cudnnSetConvolutionMathType(d_, t == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
}

namespace {

constexpr int kAlgoCandidates = 8;

template <class Perf>
auto first_success(const KernelContext& ctx, const Perf* perf, int n, const char* what) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i].algo;
  ctx.fail(cat("cuDNN has no ", what, " algorithm for this convolution"));
}

}  // namespace

ConvAlgo<cudnnConvolutionFwdAlgo_t> forward_algo(const KernelContext& ctx, cudnnHandle_t h,
                                                 const TensorDesc& x, const FilterDesc& w,
                                                 const ConvDesc& conv, const TensorDesc& y) {
  cudnnConvolutionFwdAlgoPerf_t perf[kAlgoCandidates];
  int n = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, x.get(), w.get(), conv.get(), y.get(),
                                                     kAlgoCandidates, &n, perf));
  ConvAlgo<cudnnConvolutionFwdAlgo_t> a;
  a.algo = first_success(ctx, perf, n, "forward");
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, x.get(), w.get(), conv.get(), y.get(),
                                                      a.algo, &a.workspace));
  return a;
}

ConvAlgo<cudnnConvolutionBwdDataAlgo_t> backward_data_algo(const KernelContext& ctx,
                                                           cudnnHandle_t h, const FilterDesc& w,
                                                           const TensorDesc& dy,
                                                           const ConvDesc& conv,
                                                           const TensorDesc& dx) {
  cudnnConvolutionBwdDataAlgoPerf_t perf[kAlgoCandidates];
  int n = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w.get(), dy.get(), conv.get(),
                                                          dx.get(), kAlgoCandidates, &n, perf));
  ConvAlgo<cudnnConvolutionBwdDataAlgo_t> a;
  a.algo = first_success(ctx, perf, n, "backward-data");
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, w.get(), dy.get(), conv.get(),
                                                           dx.get(), a.algo, &a.workspace));
  return a;
}

ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> backward_filter_algo(const KernelContext& ctx,
                                                               cudnnHandle_t h, const TensorDesc& x,
                                                               const TensorDesc& dy,
                                                               const ConvDesc& conv,
                                                               const FilterDesc& dw) {
  cudnnConvolutionBwdFilterAlgoPerf_t perf[kAlgoCandidates];
  int n = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x.get(), dy.get(), conv.get(),
                                                            dw.get(), kAlgoCandidates, &n, perf));
  ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> a;
  a.algo = first_success(ctx, perf, n, "backward-filter");
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x.get(), dy.get(), conv.get(),
                                                             dw.get(), a.algo, &a.workspace));
  return a;
}

}  // namespace oat::cuda
