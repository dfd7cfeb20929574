// Pieces ConvGrad and ConvTransposeGrad share: a column-range col2im, the geometry of
// ConvTranspose seen as a Conv, how the backward GEMMs' columns are cut into tasks, and per-thread
// dW accumulators.
//
// Both gradients are GEMMs over im2col matrices (conv_im2col.h). For one image n and group g, with
// col = im2col(A_ng) (K x P, K = channels·k_size) and D_ng the matrix on the other side (rows x P):
//   dW_g += D_ng · colᵀ                      (the weight gradient, summed over the batch)
// ConvGrad:           A = X, D = dY;  dX_ng = col2im(W_gᵀ · dY_ng)
// ConvTransposeGrad:  A = dY, D = X;  dX_ng = W_g · col          (a forward Conv of dY)
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/conv_im2col.h"
#include "runtime/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oat::cpu {

// The adjoint of im2col restricted to columns [p0, p1) of one image: adds col[r, p - p0] (row r
// starts at col + r·ld) into the position of `x` (channels planes of w.in_size()) that im2col
// read it from. Rows of one channel overlap in the image, rows of different channels never do,
// so channels are spread over threads when `parallel`.
template <class T>
void col2im_range(const T* col, int64_t ld, int64_t channels, const Window3& w, int64_t p0,
                  int64_t p1, T* x, bool parallel) {
  const int64_t ks = w.k_size(), plane = w.in_size();
  const int64_t OH = w.out[1], OW = w.out[2], sx = w.stride[2];
#pragma omp parallel for schedule(static) if (parallel && channels * ks * (p1 - p0) > (1 << 15))
  for (int64_t c = 0; c < channels; ++c) {
    T* xc = x + c * plane;
    for (int64_t kk = 0; kk < ks; ++kk) {
      const int64_t e = kk % w.k[2], b = (kk / w.k[2]) % w.k[1], a = kk / (w.k[2] * w.k[1]);
      const T* src = col + (c * ks + kk) * ld;
      const int64_t off_x = e * w.dil[2] - w.pad[2];
      int64_t x0, x1;
      valid_range(off_x, sx, w.in[2], OW, &x0, &x1);
      for (int64_t p = p0; p < p1;) {
        // One output row (oz, oy) from ox = s to t - 1; src[base + ox] is position p.
        const int64_t q = p / OW, s = p % OW, t = std::min(OW, s + (p1 - p));
        const int64_t base = (p - p0) - s;
        p += t - s;
        const int64_t iz = (q / OH) * w.stride[0] - w.pad[0] + a * w.dil[0];
        const int64_t iy = (q % OH) * w.stride[1] - w.pad[1] + b * w.dil[1];
        if (iz < 0 || iz >= w.in[0] || iy < 0 || iy >= w.in[1]) continue;
        const int64_t u = std::clamp(x0, s, t), v = std::clamp(x1, u, t);
        const int64_t row = (iz * w.in[1] + iy) * w.in[2] + off_x;  // xc[row + ox·sx]
        const T* sr = src + base;
        if (sx == 1) {
          T* xr = xc + (row + u);
          for (int64_t k = 0; k < v - u; ++k) xr[k] += sr[u + k];
        } else {
          for (int64_t ox = u; ox < v; ++ox) xc[row + ox * sx] += sr[ox];
        }
      }
    }
  }
}

// Calls f(yo, xo, y0, y1, x0, x1) for each output plane oz (1 for 1-D and 2-D) of kernel tap kk:
// yo is the plane's offset in the output, and output (oy, ox) for oy in [y0, y1), ox in [x0, x1)
// reads the input at xo + oy·stride_y·in_w + ox·stride_x; all other outputs of the plane read
// padding (y0 = y1 = out_h when the tap's input depth is padding).
template <class F>
void for_each_tap_plane(int64_t kk, const Window3& w, F&& f) {
  const int64_t e = kk % w.k[2], b = (kk / w.k[2]) % w.k[1], a = kk / (w.k[2] * w.k[1]);
  const int64_t off_x = e * w.dil[2] - w.pad[2], off_y = b * w.dil[1] - w.pad[1];
  const int64_t OH = w.out[1], OW = w.out[2];
  int64_t x0, x1, y0, y1;
  valid_range(off_x, w.stride[2], w.in[2], OW, &x0, &x1);
  valid_range(off_y, w.stride[1], w.in[1], OH, &y0, &y1);
  for (int64_t oz = 0; oz < w.out[0]; ++oz) {
    const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
    if (iz >= 0 && iz < w.in[0])
      f(oz * OH * OW, (iz * w.in[1] + off_y) * w.in[2] + off_x, y0, y1, x0, x1);
    else
      f(oz * OH * OW, int64_t{0}, OH, OH, x0, x1);
  }
}

template <class T>
using PlaneMap = Eigen::Map<RowMajorMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ConstPlaneMap = Eigen::Map<const RowMajorMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using StridedPlaneMap =
    Eigen::Map<RowMajorMatrix<T>, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
template <class T>
using ConstStridedPlaneMap = Eigen::Map<const RowMajorMatrix<T>, Eigen::Unaligned,
                                        Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

// dst[0, n) = src[0, n), for the short rows of small images (10 floats in LeNet-5's conv2):
// Eigen's copy of a strided block does them element by element when a row is shorter than its
// packet (16 floats with AVX-512); this loop vectorises with narrower epilogues.
template <class T>
inline void copy_row(const T* __restrict src, T* __restrict dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dst[k] = src[k];
}
// dst[0, n) += src[0, n), for the same reason.
template <class T>
inline void add_row(const T* __restrict src, T* __restrict dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dst[k] += src[k];
}

// im2col of one whole image, col row r at col + r·ld (the same matrix as im2col over [0, P)),
// one 2-D block copy per (tap, output plane): LeNet-sized images have 10-wide output rows, where
// im2col's per-segment index arithmetic costs more than the copy itself. Rows are spread over
// threads when `parallel`.
template <class T>
void im2col_image(const T* x, int64_t channels, const Window3& w, T* col, int64_t ld,
                  bool parallel) {
  const int64_t ks = w.k_size(), plane = w.in_size(), OH = w.out[1], OW = w.out[2];
  const int64_t sx = w.stride[2], sy = w.stride[1] * w.in[2], rows = channels * ks;
#pragma omp parallel for schedule(static) if (parallel && rows * w.out_size() > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* xc = x + (r / ks) * plane;
    T* dst = col + r * ld;
    for_each_tap_plane(
        r % ks, w, [&](int64_t yo, int64_t xo, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
          T* d = dst + yo;
          if (y0 > 0) std::fill(d, d + y0 * OW, T(0));
          if (y1 < OH) std::fill(d + y1 * OW, d + OH * OW, T(0));
          if (y1 == y0) return;
          const int64_t h = y1 - y0;
          if (x0 > 0) PlaneMap<T>(d + y0 * OW, h, x0, Eigen::OuterStride<>(OW)).setZero();
          if (x1 < OW)
            PlaneMap<T>(d + y0 * OW + x1, h, OW - x1, Eigen::OuterStride<>(OW)).setZero();
          if (x1 == x0) return;
          const T* s = xc + (xo + y0 * sy + x0 * sx);
          T* dd = d + y0 * OW + x0;
          const int64_t len = x1 - x0;
          if (sx == 1) {
            for (int64_t y = 0; y < h; ++y) copy_row(s + y * sy, dd + y * OW, len);
          } else {
            PlaneMap<T>(dd, h, len, Eigen::OuterStride<>(OW)) = ConstStridedPlaneMap<T>(
                s, h, len, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(sy, sx));
          }
        });
  }
}

// The adjoint of im2col_image: adds col (rows at col + r·ld) into the image x. Channels are
// spread over threads when `parallel` (the taps of one channel overlap in the image).
template <class T>
void col2im_image(const T* col, int64_t ld, int64_t channels, const Window3& w, T* x,
                  bool parallel) {
  const int64_t ks = w.k_size(), plane = w.in_size(), OW = w.out[2];
  const int64_t sx = w.stride[2], sy = w.stride[1] * w.in[2];
#pragma omp parallel for schedule(static) if (parallel && channels * ks * w.out_size() > (1 << 15))
  for (int64_t c = 0; c < channels; ++c) {
    T* xc = x + c * plane;
    for (int64_t kk = 0; kk < ks; ++kk) {
      const T* src = col + (c * ks + kk) * ld;
      for_each_tap_plane(
          kk, w, [&](int64_t yo, int64_t xo, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
            if (y1 == y0 || x1 == x0) return;
            const T* s = src + yo + y0 * OW + x0;
            T* d = xc + (xo + y0 * sy + x0 * sx);
            const int64_t h = y1 - y0, len = x1 - x0;
            if (sx == 1) {
              for (int64_t y = 0; y < h; ++y) add_row(s + y * OW, d + y * sy, len);
            } else {
              StridedPlaneMap<T>(d, h, len,
                                 Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(sy, sx)) +=
                  ConstPlaneMap<T>(s, h, len, Eigen::OuterStride<>(OW));
            }
          });
    }
  }
}

// ConvTranspose's geometry as the Conv it is the adjoint of: that Conv's input is the
// ConvTranspose output Y (w.in), its output is the ConvTranspose input X (w.out). Along each axis,
// dk = (k - 1)·dilation + 1 and natural = stride·(in - 1) + output_padding + dk:
//   out = natural - pad_begin - pad_end, or, with output_shape or SAME_*, the given out (in·stride
//   for SAME_*) and total = natural - out split as SAME_UPPER: pad_begin = total / 2, otherwise
//   pad_end = total / 2; a negative total leaves rows at the end that no input reaches.
// (The forward kernel in conv_transpose.cc uses it too.)
Window3 conv_transpose_window(const KernelContext& ctx, const WindowAttrs& a,
                              const std::vector<int64_t>& output_padding,
                              const std::vector<int64_t>& output_shape, const Shape& x_shape,
                              const std::vector<int64_t>& kernel);

// How the backward GEMMs' columns, (image, output position) pairs, are cut. A task is one group
// and `images` consecutive images; when an image has more than `width` positions (images == 1) its
// columns are processed `width` at a time inside the task, so that the tiles of one image, which
// col2im adds into the same dX plane, never run on two threads at once. The target keeps a tile's
// im2col block and D block, (K + rows) x width values, near 1 MiB (float) so they stay in cache
// between im2col and the two GEMMs, but at least 256 wide: the dW GEMM's depth is the width, and
// a shallow GEMM spends its time reading and writing dW. Batches of small images are split so
// every thread gets about the same number of tasks.
struct BackwardTiles {
  int64_t images = 1;  // images per task
  int64_t width = 0;   // positions per tile (multi-image tasks: images·P)
  int64_t chunks = 0;  // tasks per group: ceil(N / images)
};
BackwardTiles backward_tiles(int64_t N, int64_t P, int64_t K, int64_t rows, int64_t groups,
                             int64_t threads);

// Runs task(t, parallel_inside) for t in [0, tasks): in parallel, with single-threaded GEMMs,
// when there are at least as many tasks as threads; else one after another, each task spreading
// its own work (the GEMMs by gemm_split.h, im2col) over the threads. Tasks go to threads round-robin
// (static, 1), not first-come: each thread's dW partial sum (ThreadAccumulators) then covers the
// same tasks in the same order every run, so training is bit-for-bit repeatable (with dynamic
// scheduling a 2-thread LeNet-5 run moved by tenths of a point of accuracy from run to run).
template <class F>
void run_backward_tasks(int64_t tasks, int64_t threads, F&& task) {
  if (threads > 1 && tasks >= threads) {
#pragma omp parallel for schedule(static, 1)
    for (int64_t t = 0; t < tasks; ++t) task(t, false);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t, true);
  }
}

// Per-thread partial sums of dW for tasks that run in parallel: thread 0 adds straight into dW
// (which the caller zeroes), the others into zeroed scratch that finish() adds into dW.
template <class T>
class ThreadAccumulators {
 public:
  ThreadAccumulators(T* dw, int64_t size, int64_t threads)
      : dw_(dw),
        size_(size),
        partial_(static_cast<size_t>(std::max<int64_t>(threads - 1, 0) * size), T(0)) {}
  // The accumulator of the calling thread.
  T* mine() {
#ifdef _OPENMP
    const int64_t t = omp_in_parallel() ? omp_get_thread_num() : 0;
#else
    const int64_t t = 0;
#endif
    return t == 0 ? dw_ : partial_.data() + (t - 1) * size_;
  }
  void finish() {
    const int64_t extra = static_cast<int64_t>(partial_.size()) / std::max<int64_t>(size_, 1);
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> out(dw_, size_);
    for (int64_t t = 0; t < extra; ++t)
      out +=
          Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partial_.data() + t * size_, size_);
  }

 private:
  T* dw_;
  int64_t size_;
  std::vector<T> partial_;
};

// dB[m] = Σ_n Σ_p dY[n, m, p]  (dY is N x M x P).
template <class T>
void bias_gradient(const T* dy, int64_t N, int64_t M, int64_t P, T* db) {
#pragma omp parallel for schedule(static) if (N * M * P > 4 * kParallelMinElements)
  for (int64_t m = 0; m < M; ++m) {
    T acc = T(0);
    for (int64_t n = 0; n < N; ++n)
      acc += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(dy + (n * M + m) * P, P).sum();
    db[m] = acc;
  }
}

// The outputs of ConvGrad and ConvTransposeGrad (dX = 0, dW = 1, dB = 2), for dY of N x M x P:
// dB is written here (bias_gradient); dX and dW are allocated where requested, else null.
// Returns false when nothing is left to compute: neither requested, or no images (dW = 0).
template <class T>
bool conv_grad_outputs(KernelContext& ctx, const Tensor& X, const Tensor& W, const T* dy, int64_t N,
                       int64_t M, int64_t P, T*& dx, T*& dw) {
  if (ctx.output_requested(2))
    bias_gradient(dy, N, M, P, ctx.allocate_output(2, X.dtype(), {M}).template data<T>());
  dx = ctx.output_requested(0) ? ctx.allocate_output(0, X.dtype(), X.shape()).template data<T>()
                               : nullptr;
  dw = ctx.output_requested(1) ? ctx.allocate_output(1, X.dtype(), W.shape()).template data<T>()
                               : nullptr;
  if (!dx && !dw) return false;
  if (N == 0) {
    if (dw) std::fill(dw, dw + W.numel(), T(0));
    return false;
  }
  return true;
}

}  // namespace oat::cpu
