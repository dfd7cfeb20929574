// Det (opset 11): the determinant of each square matrix in the last two dims, X [*, M, M] -> Y [*].
// LU decomposition with partial pivoting (Doolittle), in double for F32/F64 (and F16/BF16 through
// FP32 copies, in_fp32):
//   for k = 0..M−1: p = argmax_{i ≥ k} |A[i, k]| (the first on ties); swap rows k, p (det = −det);
//     A[k, k] = 0 ⇒ det = 0; det ·= A[k, k]; A[i, j] −= A[i, k] / A[k, k] · A[k, j] (i, j > k)
// M = 0 gives 1 (the empty product). It trains: dA is dY times the cofactor matrix, minors through
// this kernel (train/autodiff/grads/matmul.cc). On CUDA it runs on the host
// (runtime/cuda/README.md).
#include <cmath>
#include <utility>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

double lu_det(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[p * m + k])) p = i;
    if (p != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[p * m + j]);
      det = -det;
    }
    const double piv = a[k * m + k];
    if (piv == 0.0) return 0.0;
    det *= piv;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / piv;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

template <class T>
void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2))
    ctx.fail(cat("X must be [*, M, M] (square matrices in the last two dims), got ",
                 shape_str(x.shape())));
  const Shape ys(x.shape().begin(), x.shape().end() - 2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
  const int64_t m = x.dim(-1), batch = y.numel();
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  parallel_chunks(batch, x.numel() >= kElementwiseParallelMin, [&](int64_t begin, int64_t end) {
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(xp[b * m * m + i]);
      yp[b] = static_cast<T>(lu_det(a, m));
    }
  });
}

}  // namespace

void register_det(KernelRegistry& r) {
  r.add(OpId::Det, Device::CPU, DType::F32, function_kernel(det_kernel<float>));
  r.add(OpId::Det, Device::CPU, kLowFloats, in_fp32(function_kernel(det_kernel<float>)));
  r.add(OpId::Det, Device::CPU, DType::F64, function_kernel(det_kernel<double>));
}

}  // namespace oat::cpu
