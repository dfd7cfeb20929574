// im2col / col2im and the GEMM that Conv and ConvTranspose are built on.
//
// For one image and one group, with Cg input channels and a window `w` (conv_geometry.h):
//   col[(c, a, b, e), (z, y, x)] = x[c, z*sd - pd + a*dd, y*sh - ph + b*dh, x*sw - pw + e*dw]
// (0 where the index falls in the padding). col is (Cg * kd*kh*kw) x (od*oh*ow), row-major, so
//   Conv:           Y_g (Mg x out) = W_g (Mg x Cg*k) · col
//   ConvTranspose:  col = W_gᵀ · X_g, then col2im scatters (adds) col back into the image,
// col2im being the exact adjoint of im2col.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/gemm_split.h"

namespace oat::cpu {

template <class T>
using StridedMap = Eigen::Map<RowMajorMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ConstStridedMap = Eigen::Map<const RowMajorMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// C (m x n) = op(A) · op(B) (+ C when accumulate), row-major with leading dimensions lda, ldb,
// ldc; op(A) = A stored (m x k), or Aᵀ with A stored (k x m) when ta; op(B) = B stored (k x n),
// or Bᵀ with B stored (n x k) when tb. Float products go to gemm_split.h's fast_float_gemm
// where it applies, the rest to Eigen; threaded (gemm_split.h) unless called inside an OpenMP
// parallel region.
template <class T>
void strided_gemm(const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
                  int64_t ldc, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (fast_float_gemm(a, lda, ta, b, ldb, tb, c, ldc, m, n, k, 1.f, accumulate)) return;
  }
  StridedMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  auto with_b = [&](const auto& opA) {
    if (tb)
      threaded_product(C, opA, ConstStridedMap<T>(b, n, k, Eigen::OuterStride<>(ldb)).transpose(),
                       accumulate);
    else
      threaded_product(C, opA, ConstStridedMap<T>(b, k, n, Eigen::OuterStride<>(ldb)), accumulate);
  };
  if (ta)
    with_b(ConstStridedMap<T>(a, k, m, Eigen::OuterStride<>(lda)).transpose());
  else
    with_b(ConstStridedMap<T>(a, m, k, Eigen::OuterStride<>(lda)));
}

// C (m x n) += A (m x k) · B (k x n). (Accumulating lets the caller start C at the bias:
// `C = A·B` would cost Eigen an extra pass to zero C.)
template <class T>
void gemm_accumulate(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m,
                     int64_t n, int64_t k) {
  strided_gemm(a, lda, false, b, ldb, false, c, ldc, m, n, k, true);
}

// A per-thread scratch buffer that only grows (OpenMP threads persist, so the im2col matrix is
// not reallocated, and its pages not faulted in again, on every call). kSlot tells apart
// buffers that are used at the same time.
template <class T, int kSlot = 0>
T* thread_scratch(size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

// Builds the columns [p0, p1) of one image's im2col matrix: col row r (of channels·k_size rows)
// starts at col + r·ld and holds positions p0..p1-1. x holds `channels` planes of w.in_size().
// Rows are spread over threads when `parallel`.
template <class T>
void im2col(const T* x, int64_t channels, const Window3& w, int64_t p0, int64_t p1, T* col,
            int64_t ld, bool parallel) {
  const int64_t rows = channels * w.k_size(), plane = w.in_size();
  const int64_t OH = w.out[1], OW = w.out[2];
#pragma omp parallel for schedule(static) if (parallel && rows * (p1 - p0) > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e = r % w.k[2], b = (r / w.k[2]) % w.k[1], a = (r / (w.k[2] * w.k[1])) % w.k[0];
    const T* xc = x + (r / w.k_size()) * plane;
    T* dst = col + r * ld;
    const int64_t off_x = e * w.dil[2] - w.pad[2];
    int64_t x0, x1;
    valid_range(off_x, w.stride[2], w.in[2], OW, &x0, &x1);
    // Output rows (oz, oy) are walked incrementally: divisions only once per col row.
    int64_t s = p0 % OW, oy = (p0 / OW) % OH, oz = p0 / (OW * OH);
    for (int64_t p = p0; p < p1; s = 0) {
      // One output row, from ox = s to ox = t - 1; d[ox] is position p + (ox - s).
      const int64_t t = std::min(OW, s + (p1 - p));
      T* d = dst + (p - p0) - s;
      p += t - s;
      const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
      const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
      if (++oy == OH) {
        oy = 0;
        ++oz;
      }
      if (iz < 0 || iz >= w.in[0] || iy < 0 || iy >= w.in[1]) {
        for (int64_t ox = s; ox < t; ++ox) d[ox] = T(0);
        continue;
      }
      const T* xr = xc + (iz * w.in[1] + iy) * w.in[2];  // xr[ox·stride + off_x]
      const int64_t u = std::clamp(x0, s, t), v = std::clamp(x1, u, t);
      for (int64_t ox = s; ox < u; ++ox) d[ox] = T(0);
      if (w.stride[2] == 1) {
#pragma omp simd
        for (int64_t ox = u; ox < v; ++ox) d[ox] = xr[ox + off_x];
      } else {
#pragma omp simd
        for (int64_t ox = u; ox < v; ++ox) d[ox] = xr[ox * w.stride[2] + off_x];
      }
      for (int64_t ox = v; ox < t; ++ox) d[ox] = T(0);
    }
  }
}

// The adjoint of im2col: adds every col entry into the image position it was read from.
// `y` (channels planes of w.in_size()) must be initialised (zeros or bias) by the caller.
// Channels are spread over threads when `parallel` (each writes only its own plane).
template <class T>
void col2im(const T* col, int64_t channels, const Window3& w, T* y, bool parallel) {
  const int64_t P = w.out_size(), plane = w.in_size(), ks = w.k_size();
  const int64_t OD = w.out[0], OH = w.out[1], OW = w.out[2];
#pragma omp parallel for schedule(static) if (parallel && channels * ks * P > (1 << 15))
  for (int64_t c = 0; c < channels; ++c) {
    T* yc = y + c * plane;
    for (int64_t kk = 0; kk < ks; ++kk) {
      const int64_t e = kk % w.k[2], b = (kk / w.k[2]) % w.k[1], a = kk / (w.k[2] * w.k[1]);
      const T* src = col + (c * ks + kk) * P;
      const int64_t off_x = e * w.dil[2] - w.pad[2];
      int64_t x0, x1;
      valid_range(off_x, w.stride[2], w.in[2], OW, &x0, &x1);
      for (int64_t oz = 0; oz < OD; ++oz) {
        const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
        if (iz < 0 || iz >= w.in[0]) continue;
        for (int64_t oy = 0; oy < OH; ++oy) {
          const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
          if (iy < 0 || iy >= w.in[1]) continue;
          const T* s = src + (oz * OH + oy) * OW;
          T* yr = yc + (iz * w.in[1] + iy) * w.in[2];
#pragma omp simd  // distinct ox hit distinct outputs
          for (int64_t ox = x0; ox < x1; ++ox) yr[ox * w.stride[2] + off_x] += s[ox];
        }
      }
    }
  }
}

}  // namespace oat::cpu
