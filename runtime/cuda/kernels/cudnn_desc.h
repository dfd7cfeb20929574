// RAII wrappers of cuDNN descriptors and the NCHW descriptors the conv, pool and norm kernels
// build. Spatial ranks 1..3: 1-D data gets a leading spatial 1 (cuDNN wants at least 4-D).
#pragma once

#include <vector>

#include "runtime/cuda/check.h"
#include "runtime/tensor.h"

namespace oat::cuda {

cudnnDataType_t cudnn_type(DType t);  // F32, F16, BF16; throws Error otherwise

// `shape` padded to at least 4 dims by inserting 1s after the channel dim.
std::vector<int> cudnn_dims(const Shape& shape);

class TensorDesc {
 public:
  TensorDesc() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // Packed NCHW strides.
  void set(DType t, const Shape& shape);
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc() { CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set(DType t, const Shape& shape);
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc() { CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
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

}  // namespace oat::cuda
