// cuDNN emulator: the handle, error strings, and the tensor, filter, convolution and pooling
// descriptors (heap structs of cudnn_internal.h). Set* validates as cuDNN documents:
//   tensor:  3 <= nbDims <= CUDNN_DIM_MAX, dims >= 1, strides >= 1 (any layout), at most
//            INT_MAX elements (else NOT_SUPPORTED)
//   filter:  NCHW only (else NOT_SUPPORTED), 3 <= nbDims <= CUDNN_DIM_MAX, dims >= 1
//   conv:    1 <= arrayLength <= CUDNN_DIM_MAX - 2, pad >= 0, stride >= 1, dilation >= 1
//   pooling: 1 <= nbDims <= CUDNN_DIM_MAX - 2, window >= 1, pad >= 0, stride >= 1
// An unknown enumerant is BAD_PARAM. Destroying a null descriptor is a no-op.
#include <climits>

#include "runtime/cuda/emulator/cudnn_internal.h"

using oat_emu::dnn::guard;

namespace {

bool known_dtype(cudnnDataType_t t) {
  return static_cast<int>(t) >= CUDNN_DATA_FLOAT && static_cast<int>(t) <= CUDNN_DATA_COMPLEX_FP64;
}

template <class T>
cudnnStatus_t create(T** out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  return guard([&] {
    *out = new T();
    return CUDNN_STATUS_SUCCESS;
  });
}

template <class T>
cudnnStatus_t destroy(T* p) {
  delete p;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) { return create(handle); }

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  return destroy(handle);
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define OAT_DNN_NAME(s) \
  case s: return #s;
    OAT_DNN_NAME(CUDNN_STATUS_SUCCESS)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_INITIALIZED)
    OAT_DNN_NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_DEPRECATED)
    OAT_DNN_NAME(CUDNN_STATUS_LICENSE_ERROR)
    OAT_DNN_NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    OAT_DNN_NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    OAT_DNN_NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    OAT_DNN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    OAT_DNN_NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_EXECUTION_FAILED)
    OAT_DNN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    OAT_DNN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    OAT_DNN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    OAT_DNN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef OAT_DNN_NAME
    case 2001: return "CUDNN_STATUS_INVALID_VALUE";
    default: break;
  }
  return "CUDNN_STATUS_UNKNOWN";
}

// ---- tensors ----

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  return create(tensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  return destroy(tensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                                     cudnnDataType_t dataType, int nbDims,
                                                     const int dimA[], const int strideA[]) {
  if (!tensorDesc || !dimA || !strideA || !known_dtype(dataType)) return CUDNN_STATUS_BAD_PARAM;
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  int64_t n = 1;
  for (int d = 0; d < nbDims; ++d) {
    if (dimA[d] < 1 || strideA[d] < 1) return CUDNN_STATUS_BAD_PARAM;
    n *= dimA[d];
    if (n > INT_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  }
  cudnnTensorStruct& t = *tensorDesc;
  t.set = true;
  t.dtype = dataType;
  t.nb = nbDims;
  for (int d = 0; d < nbDims; ++d) {
    t.dims[d] = dimA[d];
    t.strides[d] = strideA[d];
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- filters ----

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  return create(filterDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  return destroy(filterDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                                                     cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int nbDims,
                                                     const int filterDimA[]) {
  if (!filterDesc || !filterDimA || !known_dtype(dataType)) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;  // the emulator's limit
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  int64_t n = 1;
  for (int d = 0; d < nbDims; ++d) {
    if (filterDimA[d] < 1) return CUDNN_STATUS_BAD_PARAM;
    n *= filterDimA[d];
    if (n > INT_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  }
  cudnnFilterStruct& f = *filterDesc;
  f.set = true;
  f.dtype = dataType;
  f.nb = nbDims;
  for (int d = 0; d < nbDims; ++d) f.dims[d] = filterDimA[d];
  return CUDNN_STATUS_SUCCESS;
}

// ---- convolutions ----

cudnnStatus_t CUDNNWINAPI
cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  return create(convDesc);
}

cudnnStatus_t CUDNNWINAPI
cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  return destroy(convDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                                          int arrayLength, const int padA[],
                                                          const int filterStrideA[],
                                                          const int dilationA[],
                                                          cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
  if (!convDesc || !padA || !filterStrideA || !dilationA || !known_dtype(computeType))
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  if (arrayLength < 1 || arrayLength > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_NOT_SUPPORTED;
  for (int d = 0; d < arrayLength; ++d)
    if (padA[d] < 0 || filterStrideA[d] < 1 || dilationA[d] < 1) return CUDNN_STATUS_BAD_PARAM;
  cudnnConvolutionStruct& c = *convDesc;
  c.set = true;
  c.nsp = arrayLength;
  for (int d = 0; d < arrayLength; ++d) {
    c.pad[d] = padA[d];
    c.stride[d] = filterStrideA[d];
    c.dil[d] = dilationA[d];
  }
  c.mode = mode;
  c.compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                        int groupCount) {
  if (!convDesc || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  convDesc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnMathType_t mathType) {
  if (!convDesc) return CUDNN_STATUS_BAD_PARAM;
  if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
      mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH)
    return CUDNN_STATUS_BAD_PARAM;
  convDesc->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

// ---- pooling ----

cudnnStatus_t CUDNNWINAPI cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* poolingDesc) {
  return create(poolingDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc) {
  return destroy(poolingDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                                                      const cudnnPoolingMode_t mode,
                                                      const cudnnNanPropagation_t maxpoolingNanOpt,
                                                      int nbDims, const int windowDimA[],
                                                      const int paddingA[], const int strideA[]) {
  if (!poolingDesc || !windowDimA || !paddingA || !strideA) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_POOLING_MAX && mode != CUDNN_POOLING_MAX_DETERMINISTIC &&
      mode != CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING &&
      mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
    return CUDNN_STATUS_BAD_PARAM;
  if (maxpoolingNanOpt != CUDNN_NOT_PROPAGATE_NAN && maxpoolingNanOpt != CUDNN_PROPAGATE_NAN)
    return CUDNN_STATUS_BAD_PARAM;
  if (nbDims < 1 || nbDims > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_NOT_SUPPORTED;
  for (int d = 0; d < nbDims; ++d)
    if (windowDimA[d] < 1 || paddingA[d] < 0 || strideA[d] < 1) return CUDNN_STATUS_BAD_PARAM;
  cudnnPoolingStruct& p = *poolingDesc;
  p.set = true;
  p.mode = mode;
  p.nan = maxpoolingNanOpt;
  p.nsp = nbDims;
  for (int d = 0; d < nbDims; ++d) {
    p.window[d] = windowDimA[d];
    p.pad[d] = paddingA[d];
    p.stride[d] = strideA[d];
  }
  return CUDNN_STATUS_SUCCESS;
}
