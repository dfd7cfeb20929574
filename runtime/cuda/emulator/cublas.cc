// The CUDA emulator's cuBLAS: the handle calls and cublasGemmStridedBatchedEx, with the real
// header's signatures (cublas_v2.h), on the CPU. Column-major, as cuBLAS:
//   for b < batch:  C_b = alpha · op(A_b) · op(B_b) + beta · C_b,   X_b = X + b · strideX,
//   op(A) is m×k (A stored m×k with lda ≥ m, or k×m with lda ≥ k when transposed), op(B) k×n,
//   C m×n with ldc ≥ m; beta = 0 never reads C; k = 0 leaves beta · C.
// Products accumulate in FP32 (CUBLAS_COMPUTE_32F) and round once to C's type. Arguments are
// checked as cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE / NOT_SUPPORTED); an operand that is
// not device memory, or whose last element lies past its allocation, stops the program with a
// message naming it (on a GPU that is an illegal address, seen at the next synchronisation).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cuda/emulator/stream.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace {

float load(const void* p, cudaDataType_t t, int64_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

void store(void* p, cudaDataType_t t, int64_t i, float v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = v; break;
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
  }
}

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

// Storage that a rows×cols column-major matrix with leading dimension ld spans, over `batch`
// matrices `stride` elements apart, must lie in one device allocation.
void require_operand(const char* name, const void* p, cudaDataType_t t, int64_t rows, int64_t cols,
                     int64_t ld, int64_t stride, int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return;
  const int64_t span = (batch - 1) * stride + ld * (cols - 1) + rows;
  if (!oat_emu::is_device_pointer(p) ||
      !oat_emu::device_range(p, static_cast<size_t>(span) * type_bytes(t))) {
    std::fprintf(stderr,
                 "CUDA emulator: cublasGemmStridedBatchedEx: %s (%lld×%lld, ld %lld, stride %lld, "
                 "batch %d) is %s\n",
                 name, static_cast<long long>(rows), static_cast<long long>(cols),
                 static_cast<long long>(ld), static_cast<long long>(stride), batch,
                 oat_emu::is_device_pointer(p) ? "past the end of its device allocation"
                                               : "not device memory");
    std::abort();
  }
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->math = m;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* w, size_t bytes) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && !oat_emu::device_range(w, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
  h->workspace = w;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return cublasGetStatusName(s);
  }
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) ||
      (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;  // conjugate transposes: real types only here
  if (m < 0 || n < 0 || k < 0 || batchCount < 0 || lda < std::max(1, ta ? k : m) ||
      ldb < std::max(1, tb ? n : k) || ldc < std::max(1, m) || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_PEDANTIC &&
      computeType != CUBLAS_COMPUTE_32F_FAST_16F && computeType != CUBLAS_COMPUTE_32F_FAST_16BF &&
      computeType != CUBLAS_COMPUTE_32F_FAST_TF32)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool ok_types =
      Atype == Btype && (Ctype == Atype || Ctype == CUDA_R_32F) &&
      (Atype == CUDA_R_32F ? Ctype == CUDA_R_32F : Atype == CUDA_R_16F || Atype == CUDA_R_16BF);
  if (!ok_types) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;
  if (k > 0) {
    require_operand("A", A, Atype, ta ? k : m, ta ? m : k, lda, strideA, batchCount);
    require_operand("B", B, Btype, tb ? n : k, tb ? k : n, ldb, strideB, batchCount);
  }
  require_operand("C", C, Ctype, m, n, ldc, strideC, batchCount);
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  oat_emu::enqueue(h->stream, "cublasGemmStridedBatchedEx", [=] {
    std::vector<float> col(static_cast<size_t>(k));
    for (int bi = 0; bi < batchCount; ++bi) {
      const int64_t oa = bi * strideA, ob = bi * strideB, oc = bi * strideC;
      for (int j = 0; j < n; ++j) {
        for (int p = 0; p < k; ++p)
          col[static_cast<size_t>(p)] =
              load(B, Btype, ob + (tb ? static_cast<int64_t>(p) * ldb + j
                                      : static_cast<int64_t>(j) * ldb + p));
        for (int i = 0; i < m; ++i) {
          float acc = 0.f;
          for (int p = 0; p < k; ++p)
            acc += load(A, Atype, oa + (ta ? static_cast<int64_t>(i) * lda + p
                                           : static_cast<int64_t>(p) * lda + i)) *
                   col[static_cast<size_t>(p)];
          const int64_t ci = oc + static_cast<int64_t>(j) * ldc + i;
          const float old = b == 0.f ? 0.f : load(C, Ctype, ci);
          store(C, Ctype, ci, a * acc + (b == 0.f ? 0.f : b * old));
        }
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
