// The cuBLAS GEMM shared by matmul.cc and grad_matmul.cc.
#pragma once

#include "runtime/kernel.h"

namespace oat::cuda {

// Row-major C[M,N] = alpha·op(A)·op(B) + beta·C, op(A) = ta ? Aᵀ : A with A stored [K,M] when ta
// ([M,K] otherwise), B likewise ([N,K] when tb, [K,N] otherwise).
struct GemmShape {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
};

// The cublasGemmStridedBatchedEx arguments of a row-major GemmShape (host code, checked without
// a device in tests/cuda/gemm_args_test.cc). Row-major C[M,N] read column-major is Cᵀ = op(B)ᵀ·op(A)ᵀ,
// so cuBLAS gets the N×M product with the operands swapped: m = N, n = M, k = K; its first
// operand is B (transposed when tb; ld = K if tb, N otherwise), its second A (transposed when
// ta; ld = M if ta, K otherwise), ldc = N. cuBLAS requires every leading dimension ≥ max(1, rows)
// even where K = 0 leaves it unread, so each is at least 1. Throws Error when a size or the batch
// count does not fit cuBLAS's int arguments (the strides are 64-bit there).
struct CublasGemmArgs {
  bool trans_first = false, trans_second = false;  // op of cuBLAS's A (our B) and B (our A)
  int m = 0, n = 0, k = 0;
  int ld_first = 1, ld_second = 1, ldc = 1;
  int batch = 0;
};
CublasGemmArgs cublas_gemm_args(const GemmShape& g, int64_t batch);

// `batch` products with element strides sa/sb/sc between matrices (0: the same matrix), FP32
// compute (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F) for F32/F16/BF16 storage `t`.
// K = 0 makes no cuBLAS call: each C is beta·C (zeros when beta = 0, C then not read, as BLAS).
void gemm(KernelContext& ctx, DType t, const GemmShape& g, float alpha, const void* A, int64_t sa,
          const void* B, int64_t sb, float beta, void* C, int64_t sc, int64_t batch);
// The same with C stored in `tc`: F32 for F16/BF16 operands `t` (the weight gradients of
// grad_type = FLOAT, runtime/grad_type.h) — cuBLAS takes A/B in CUDA_R_16F/16BF and C in
// CUDA_R_32F with CUBLAS_COMPUTE_32F, so C is the FP32 accumulator itself, never rounded, and
// beta = 1 accumulates into it in FP32. tc must be t or F32.
void gemm(KernelContext& ctx, DType t, DType tc, const GemmShape& g, float alpha, const void* A,
          int64_t sa, const void* B, int64_t sb, float beta, void* C, int64_t sc, int64_t batch);

}  // namespace oat::cuda
