// The CPU emulator of the cuDNN legacy API subset the CUDA backend calls (internal to
// runtime/cuda/emulator/cudnn_*.cc): the structs behind cudnn.h's opaque handle and descriptor
// pointers, element access in the four data types it computes in, and the checks the API
// functions share. Device memory is host memory in the emulator.
//
// Numerics: every element is read as a double, sums accumulate in double, and the result
// alpha·op + beta·old is rounded ONCE to the output type (round to nearest even; __double2half /
// __double2bfloat16 for HALF/BF16). When beta == 0 the old output is not read (it may be NaN), as
// cuDNN documents.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <cstdint>
#include <new>

#include "runtime/cuda/emulator/stream.h"

// cudnn.h marks the legacy API deprecated; this emulator implements exactly that API.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct cudnnContext {
  cudaStream_t stream = nullptr;  // cudnnSetStream; the legacy default stream until then
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int nb = 0;
  int dims[CUDNN_DIM_MAX] = {};
  int strides[CUDNN_DIM_MAX] = {};  // in elements, any positive values
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int nb = 0;
  int dims[CUDNN_DIM_MAX] = {};  // K, C/group, kernel... (NCHW, packed)
};

struct cudnnConvolutionStruct {
  bool set = false;
  int nsp = 0;  // spatial dims
  int pad[CUDNN_DIM_MAX] = {}, stride[CUDNN_DIM_MAX] = {}, dil[CUDNN_DIM_MAX] = {};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct cudnnPoolingStruct {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  int nsp = 0;
  int window[CUDNN_DIM_MAX] = {}, pad[CUDNN_DIM_MAX] = {}, stride[CUDNN_DIM_MAX] = {};
};

namespace oat_emu::dnn {

// FLOAT, DOUBLE, HALF, BFLOAT16: the data types the emulator computes in.
inline bool computable(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF ||
         t == CUDNN_DATA_BFLOAT16;
}

inline double load(const void* p, cudnnDataType_t t, int64_t i) {
  switch (t) {
    case CUDNN_DATA_FLOAT: return static_cast<const float*>(p)[i];
    case CUDNN_DATA_DOUBLE: return static_cast<const double*>(p)[i];
    case CUDNN_DATA_HALF: return static_cast<float>(static_cast<const __half*>(p)[i]);
    case CUDNN_DATA_BFLOAT16: return static_cast<float>(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return 0;
  }
}

// One rounding from double to t (round to nearest even).
inline void store(void* p, cudnnDataType_t t, int64_t i, double v) {
  switch (t) {
    case CUDNN_DATA_FLOAT: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case CUDNN_DATA_DOUBLE: static_cast<double*>(p)[i] = v; break;
    case CUDNN_DATA_HALF: static_cast<__half*>(p)[i] = __double2half(v); break;
    case CUDNN_DATA_BFLOAT16: static_cast<__nv_bfloat16*>(p)[i] = __double2bfloat16(v); break;
    default: break;
  }
}

// alpha and beta point to a double for DOUBLE data, else to a float (read at call time).
inline double scalar(const void* p, cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(p)
                                : static_cast<double>(*static_cast<const float*>(p));
}

// out[off] = alpha·v + beta·out[off], not reading out when beta == 0.
inline void blend(void* out, cudnnDataType_t t, int64_t off, double alpha, double beta, double v) {
  double r = alpha * v;
  if (beta != 0) r += beta * load(out, t, off);
  store(out, t, off, r);
}

// A tensor's element offsets for logical (row-major) index i.
struct Layout {
  int nb = 0;
  int dims[CUDNN_DIM_MAX] = {};
  int64_t strides[CUDNN_DIM_MAX] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < nb; ++d) n *= dims[d];
    return n;
  }
  int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = nb - 1; d >= 0; --d) {
      off += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return off;
  }
};

inline Layout layout_of(const cudnnTensorStruct& t) {
  Layout l;
  l.nb = t.nb;
  for (int d = 0; d < t.nb; ++d) {
    l.dims[d] = t.dims[d];
    l.strides[d] = t.strides[d];
  }
  return l;
}

inline Layout layout_of(const cudnnFilterStruct& f) {  // packed
  Layout l;
  l.nb = f.nb;
  int64_t s = 1;
  for (int d = f.nb - 1; d >= 0; --d) {
    l.dims[d] = f.dims[d];
    l.strides[d] = s;
    s *= f.dims[d];
  }
  return l;
}

// Every cudnn* entry point's body runs in guard(): no exception leaves it (a host allocation
// failure becomes CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, anything else
// CUDNN_STATUS_INTERNAL_ERROR).
template <class F>
cudnnStatus_t guard(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  } catch (...) {
    return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace oat_emu::dnn
