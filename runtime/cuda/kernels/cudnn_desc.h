// RAII wrappers of cuDNN descriptors and the NCHW descriptors the conv, pool and norm kernels
// build. Spatial ranks 1..3: 1-D data gets a leading spatial 1 (cuDNN wants at least 4-D).
// Also what the convolution kernels (conv.cc, conv_transpose.cc) share: the convolution
// descriptor's math settings and the choice of an algorithm with its workspace size.
#pragma once

#include <vector>

#include "runtime/cuda/check.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cuda {

cudnnDataType_t cudnn_type(DType t);  // F32, F16, BF16; throws Error otherwise

// `shape` padded to at least 4 dims by inserting 1s after the channel dim. cuDNN's legacy
// descriptors take int dims and strides: throws Error when the tensor has more than INT_MAX
// elements (a packed stride would overflow) or a dim outside [0, INT_MAX].
std::vector<int> cudnn_dims(const Shape& shape);
// Packed (NCHW, row-major) strides of `dims`.
std::vector<int> cudnn_packed_strides(const std::vector<int>& dims);

class TensorDesc {
 public:
  TensorDesc() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // Packed NCHW strides.
  void set(DType t, const Shape& shape);
  cudnnTensorDescriptor_t get() const { return d_; }
  size_t bytes() const { return bytes_; }  // of the packed tensor it describes

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
  size_t bytes_ = 0;
};

class FilterDesc {
 public:
  FilterDesc() { CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set(DType t, const Shape& shape);
  cudnnFilterDescriptor_t get() const { return d_; }
  size_t bytes() const { return bytes_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
  size_t bytes_ = 0;
};

// The math type a convolution's algorithms are ranked with: F32 without TF32 (FMA), F16/BF16
// on tensor cores.
cudnnMathType_t ranking_math(DType t);

class ConvDesc {
 public:
  ConvDesc() { CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  // Cross-correlation with `group` groups and pad, stride, dilation per spatial dim (cuDNN's
  // spatial rank, at least 2); FP32 accumulation; F16/BF16 on tensor cores
  // (CUDNN_TENSOR_OP_MATH), F32 without TF32 (CUDNN_FMA_MATH) so it matches the CPU reference.
  void set(DType t, const std::vector<int>& pad, const std::vector<int>& stride,
           const std::vector<int>& dil, int64_t group);
  cudnnConvolutionDescriptor_t get() const { return d_; }
  DType dtype() const { return t_; }
  // The descriptor with math type m (the one its algorithm was chosen with; cuDNN 7.4+ reads
  // the pair): for one convolution call, made just before it.
  cudnnConvolutionDescriptor_t with_math(cudnnMathType_t m) {
    if (m != math_) {
      CUDNN_CHECK(cudnnSetConvolutionMathType(d_, m));
      math_ = m;
    }
    return d_;
  }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
  DType t_ = DType::F32;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
};

class PoolDesc {
 public:
  PoolDesc() { CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d_)); }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d_); }
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
  cudnnPoolingDescriptor_t get() const { return d_; }

 private:
  cudnnPoolingDescriptor_t d_ = nullptr;
};

// An algorithm for one convolution, its math type and the workspace bytes it needs, from the
// ranking of cudnnGet*Algorithm_v7 (heuristics only: no benchmarking, no synchronisation): the
// first result that succeeded, whose math type keeps F32 in FP32 (no TF32: FMA or default math)
// and F16/BF16 on tensor cores where ranked, and whose workspace is at most kConvWorkspaceCap;
// else the first that succeeded with an allowed math type whatever its workspace (pick_conv_algo).
// Fails naming the direction when none does. Run it with conv.with_math(algo.math).
// Argument order as the cuDNN call it plans:
//   forward:          Y = X ⋆ W                 (x, w, conv, y)
//   backward data:    dX from W and dY          (w, dy, conv, dx)
//   backward filter:  dW from X and dY          (x, dy, conv, dw)
template <class Algo>
struct ConvAlgo {
  Algo algo{};
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

constexpr size_t kConvWorkspaceCap = size_t{1} << 30;  // 1 GiB

// One ranked result of cudnnGet*Algorithm_v7, as pick_conv_algo reads it.
struct ConvAlgoCandidate {
  cudnnStatus_t status;
  cudnnMathType_t math;
  size_t memory;
};
// The index in `c` (ranked best first) that the rule above picks for dtype t, or -1 if none.
int pick_conv_algo(const std::vector<ConvAlgoCandidate>& c, DType t);
// The math type a picked algorithm runs with (and sizes its workspace under): its ranked one,
// except that F32 always runs with CUDNN_FMA_MATH. Since cuDNN 8, CUDNN_DEFAULT_MATH permits
// TF32 tensor-core math for FP32 data on sm_80+ (PyTorch's allow_tf32 = true is DEFAULT_MATH,
// allow_tf32 = false is FMA_MATH), so an F32 candidate ranked with DEFAULT_MATH must not be run
// with it.
cudnnMathType_t run_math(DType t, cudnnMathType_t ranked);
ConvAlgo<cudnnConvolutionFwdAlgo_t> forward_algo(const KernelContext& ctx, cudnnHandle_t h,
                                                 const TensorDesc& x, const FilterDesc& w,
                                                 ConvDesc& conv, const TensorDesc& y);
ConvAlgo<cudnnConvolutionBwdDataAlgo_t> backward_data_algo(const KernelContext& ctx,
                                                           cudnnHandle_t h, const FilterDesc& w,
                                                           const TensorDesc& dy,
                                                           ConvDesc& conv,
                                                           const TensorDesc& dx);
ConvAlgo<cudnnConvolutionBwdFilterAlgo_t> backward_filter_algo(const KernelContext& ctx,
                                                               cudnnHandle_t h, const TensorDesc& x,
                                                               const TensorDesc& dy,
                                                               ConvDesc& conv,
                                                               const FilterDesc& dw);

}  // namespace oat::cuda
