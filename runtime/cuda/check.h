// Return-code checks for the CUDA runtime, cuBLAS and cuDNN: a failure throws oat::Error with the
// call as written, file:line and the library's error string, e.g.
//   cudaMalloc(&p, n) failed at runtime/cuda/memory.cc:31: out of memory
// Host code only (the .cc side); the _impl.cu launchers check cudaGetLastError the same way.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace oat::cuda {

[[noreturn]] void throw_call_error(const char* call, const char* file, int line, const char* what);
const char* cublas_status_name(cublasStatus_t s);

}  // namespace oat::cuda

#define CUDA_CHECK(call)                                                               \
  do {                                                                                 \
    const cudaError_t oat_err_ = (call);                                               \
    if (oat_err_ != cudaSuccess)                                                       \
      ::oat::cuda::throw_call_error(#call, __FILE__, __LINE__, cudaGetErrorString(oat_err_)); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    const cublasStatus_t oat_st_ = (call);                                                 \
    if (oat_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::oat::cuda::throw_call_error(#call, __FILE__, __LINE__,                             \
                                    ::oat::cuda::cublas_status_name(oat_st_));             \
  } while (0)

#define CUDNN_CHECK(call)                                                                  \
  do {                                                                                     \
    const cudnnStatus_t oat_st_ = (call);                                                  \
    if (oat_st_ != CUDNN_STATUS_SUCCESS)                                                   \
      ::oat::cuda::throw_call_error(#call, __FILE__, __LINE__, cudnnGetErrorString(oat_st_)); \
  } while (0)

// A status already returned by `name` (a call whose refusal the caller handles first).
#define CUDNN_CHECK_STATUS(status, name)                                                   \
  do {                                                                                     \
    const cudnnStatus_t oat_st_ = (status);                                                \
    if (oat_st_ != CUDNN_STATUS_SUCCESS)                                                   \
      ::oat::cuda::throw_call_error(name, __FILE__, __LINE__, cudnnGetErrorString(oat_st_)); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, execution errors at the next
// synchronising call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
