// Conv (1-, 2-, 3-D, grouped, depthwise) on NCHW data.
//
//   Y[n, m, o] = B[m] + Σ_{c, t} W[m, c, t] · X[n, g·Cg + c, o·stride - pad + t·dil]
//
// (g the group of output channel m, X read as 0 in the padding). Three paths:
//   - depthwise (group == C, one input channel per group): a direct loop over taps, parallel over
//     (n, m) planes — a GEMM with K = k_size would be all overhead;
//   - one input channel (C == 1), unit row stride: direct 32-column register blocks over the
//     taps of a zero-padded copy of the image, several output channels at once (conv_direct.h);
//   - 3x3, stride 1, 16..256 channels, float/double: Winograd F(2x2, 3x3) (conv_winograd.h);
//   - otherwise im2col (conv_im2col.h) + GEMM: Y_g (Mg x N·P) = W_g (Mg x K) · col (K x N·P),
//     the columns cut into cache-sized tiles (column_tiles); a pointwise conv (1x1, stride 1,
//     no pads) reads its columns straight from X.
// With at least as many (group, tile) tasks as threads the tasks run in parallel, each with a
// single-threaded GEMM and its own im2col buffer; otherwise the tasks run in turn and each GEMM
// is split over the threads (gemm_split.h).

// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 GEMM packing
// (gemm_pack_rhs / ptranspose); it must be silenced before the first include pulls in immintrin.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <type_traits>

#include "runtime/cpu/kernels/conv_direct.h"
#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/conv_im2col.h"
#include "runtime/cpu/kernels/conv_winograd.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"  // im2col_image
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

void register_conv_transpose(KernelRegistry& r);  // conv_transpose.cc

namespace {

// Depthwise: Y[n, m] = B[m] + Σ_t W[m, 0, t] · X[n, m / mult, o·stride - pad + t·dil].
template <class T>
void depthwise(const T* x, const T* wt, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
               const Window3& w) {
  const int64_t mult = M / C, P = w.out_size(), plane = w.in_size(), ks = w.k_size();
  const int64_t OD = w.out[0], OH = w.out[1], OW = w.out[2];
#pragma omp parallel for schedule(static) if (N * M * P * ks > (1 << 15))
  for (int64_t nm = 0; nm < N * M; ++nm) {
    const int64_t n = nm / M, m = nm % M;
    const T* xc = x + (n * C + m / mult) * plane;
    const T* wm = wt + m * ks;
    T* yp = y + nm * P;
    std::fill(yp, yp + P, bias ? bias[m] : T(0));
    for (int64_t e = 0; e < w.k[2]; ++e) {
      const int64_t off_x = e * w.dil[2] - w.pad[2];
      int64_t x0, x1;
      valid_range(off_x, w.stride[2], w.in[2], OW, &x0, &x1);
      for (int64_t a = 0; a < w.k[0]; ++a)
        for (int64_t b = 0; b < w.k[1]; ++b) {
          const T wv = wm[(a * w.k[1] + b) * w.k[2] + e];
          for (int64_t oz = 0; oz < OD; ++oz) {
            const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
            if (iz < 0 || iz >= w.in[0]) continue;
            for (int64_t oy = 0; oy < OH; ++oy) {
              const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
              if (iy < 0 || iy >= w.in[1]) continue;
              const T* xr = xc + (iz * w.in[1] + iy) * w.in[2];
              T* yr = yp + (oz * OH + oy) * OW;
              if (w.stride[2] == 1) {
#pragma omp simd
                for (int64_t ox = x0; ox < x1; ++ox) yr[ox] += wv * xr[ox + off_x];
              } else {
#pragma omp simd
                for (int64_t ox = x0; ox < x1; ++ox) yr[ox] += wv * xr[ox * w.stride[2] + off_x];
              }
            }
          }
        }
    }
  }
}

// How the GEMM's columns, (image, output position) pairs, are cut into tasks. A tile holds
// `width` positions of one image (per_image > 0), or `images` whole images (small outputs).
// The target width keeps a tile's im2col block and output block, (K + Mg) x width floats, near
// 1 MiB so both stay in cache between im2col, the GEMM and the bias, but is at least 512: every
// tile packs the whole of W_g again, which for the deep layers (W_g up to 512 x 4608) costs as
// much as the product itself unless the tile is wide. Big images are cut into about four tiles
// per thread (a thread that the OS slows down then holds the others back less); small ones are
// grouped, down to one tile per thread.
struct ColumnTiles {
  int64_t per_image = 0;  // tiles per image (single-image tiles), or 0
  int64_t width = 0;      // positions per single-image tile
  int64_t images = 1;     // images per multi-image tile
  int64_t count = 0;      // tiles per group
};
ColumnTiles column_tiles(int64_t N, int64_t P, int64_t K, int64_t Mg, int64_t groups,
                         int64_t threads) {
  const int64_t target = std::clamp<int64_t>((int64_t{1} << 18) / (K + Mg), 512, 4096);
  ColumnTiles t;
  if (2 * P >= target || N == 1) {
    const int64_t want = (4 * threads + groups - 1) / groups;  // tiles per group
    t.per_image = (P + target - 1) / target;
    if (threads > 1 && N * t.per_image < want)  // few images: cut finer, down to 32 positions
      t.per_image = std::max(t.per_image, std::min((want + N - 1) / N, (P + 31) / 32));
    t.width = (P + t.per_image - 1) / t.per_image;
    t.per_image = (P + t.width - 1) / t.width;
    t.count = N * t.per_image;
  } else {
    const int64_t want = (threads + groups - 1) / groups;
    t.images = std::clamp<int64_t>(target / P, 1, std::max<int64_t>(1, (N + want - 1) / want));
    t.count = (N + t.images - 1) / t.images;
    if (threads > 1 && (groups * t.count) % threads != 0) {
      // Round the tasks up to a multiple of the threads (LeNet's conv2: 5 tiles of 15 images
      // left one of two threads idle for a fifth of the time; 6 tiles of 11 do not).
      int64_t count = t.count;
      while ((groups * count) % threads != 0 && count < N) ++count;
      t.images = (N + count - 1) / count;
      t.count = (N + t.images - 1) / t.images;
    }
  }
  return t;
}

template <class T>
class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const Node& node)
      : attrs_(parse_window_attrs(node)), group_(node.attr_int("group", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.input_or_null(2);
    check_conv_ranks(ctx, X.shape(), W.shape());
    const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), G = group_;
    check_conv_groups(ctx, X.shape(), W.shape(), G);
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
      ctx.fail(cat("X, W and B must share a dtype (X is ", dtype_name(X.dtype()), ")"));
    if (B && (B->rank() != 1 || B->dim(0) != M))
      ctx.fail(cat("B ", shape_str(B->shape()), " must be [", M, "] for W ", shape_str(W.shape())));
    const std::vector<int64_t> kernel = conv_kernel_of(ctx, attrs_.kernel_shape, W.shape());
    const Window3 w = forward_window(ctx, attrs_, X.shape(), kernel);

    Shape y_shape = {N, M};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), y_shape);
    if (Y.numel() == 0) return;
    const T* x = X.data<T>();
    const T* wt = W.data<T>();
    const T* bias = B ? B->data<T>() : nullptr;
    T* y = Y.data<T>();

    if (G == C && W.dim(1) == 1 && G > 1) return depthwise(x, wt, bias, y, N, C, M, w);
    if (direct_single_channel_conv_applies(w, C, G))  // conv_direct.h
      return direct_single_channel_conv(x, wt, bias, y, N, M, w, num_threads());
    // Winograd's transforms lose accuracy in 16-bit types: float and double only.
    constexpr bool kWinogradType = std::is_same_v<T, float> || std::is_same_v<T, double>;
    if (kWinogradType && winograd_applies(w, G, C, M)) {
      const Filters f = winograd_filters_of(ctx, W, M, C);
      return conv_winograd_u(x, f.u, bias, y, N, C, M, w, num_threads());
    }

    const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
    const int64_t plane = w.in_size(), threads = num_threads();
    const bool pointwise = w.is_pointwise();
    const ColumnTiles tiles = column_tiles(N, P, K, Mg, G, threads);
    // One task: group g, one tile of columns:
    //   Y[n, g·Mg + m, p] = B[g·Mg + m] + Σ_k W_g[m, k] · col[k, (n, p)]
    auto task = [&](int64_t t, bool parallel_inside) {
      const int64_t g = t / tiles.count, j = t % tiles.count;
      const T* wg = wt + g * Mg * K;
      auto fill_rows = [&](T* out, int64_t ld, int64_t width) {  // bias, or 0
        for (int64_t m = 0; m < Mg; ++m) {
          const T b = bias ? bias[g * Mg + m] : T(0);
          std::fill(out + m * ld, out + m * ld + width, b);
        }
      };
      if (tiles.per_image > 0) {  // positions [p0, p1) of image n: write straight into Y
        const int64_t n = j / tiles.per_image, p0 = (j % tiles.per_image) * tiles.width;
        const int64_t width = std::min(P, p0 + tiles.width) - p0;
        const T* xg = x + (n * C + g * Cg) * plane;
        const T* col = xg + p0;  // pointwise: the image is its own column matrix
        int64_t ldb = P;
        if (!pointwise) {
          T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
          im2col(xg, Cg, w, p0, p0 + width, buf, width, parallel_inside);
          col = buf;
          ldb = width;
        }
        T* yg = y + (n * M + g * Mg) * P + p0;
        fill_rows(yg, P, width);
        gemm_accumulate(wg, K, col, ldb, yg, P, Mg, width, K);
        return;
      }
      // Images [n0, n1) side by side, then copied out image by image.
      const int64_t n0 = j * tiles.images, n1 = std::min(N, n0 + tiles.images);
      const int64_t width = (n1 - n0) * P;
      T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
      for (int64_t n = n0; n < n1; ++n)  // whole images: block copies per (tap, plane)
        im2col_image(x + (n * C + g * Cg) * plane, Cg, w, buf + (n - n0) * P, width,
                     parallel_inside);
      T* out = thread_scratch<T, 1>(static_cast<size_t>(Mg * width));
      fill_rows(out, width, width);
      gemm_accumulate(wg, K, buf, width, out, width, Mg, width, K);
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t m = 0; m < Mg; ++m) {
          const T* src = out + m * width + (n - n0) * P;
          std::copy(src, src + P, y + (n * M + g * Mg + m) * P);
        }
    };
    const int64_t tasks = G * tiles.count;
    if (threads > 1 && tasks >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) task(t, false);
    } else {
      for (int64_t t = 0; t < tasks; ++t) task(t, true);
    }
  }

 private:
  // Winograd's transformed filters of W. When W is a constant of the executor (an initializer
  // not fed: a model run by infer or eval), they are computed at the first run and kept with
  // W's storage, which identifies them at later runs (0.33 ms of one thread saved per run for a
  // 256-channel conv); a fed W (training's parameters, which may change in place between runs)
  // is transformed at every run.
  struct Filters {
    const T* u = nullptr;
    std::unique_ptr<HostBuffer<T>> owned;  // this run's, when W is not kept
  };
  Filters winograd_filters_of(const KernelContext& ctx, const Tensor& W, int64_t M, int64_t C) {
    Filters f;
    const bool constant = ctx.input_constant(1);
    if (constant && kept_u_ && kept_w_ == W.storage() && kept_shape_ == W.shape()) {
      f.u = kept_u_->data();
      return f;
    }
    std::unique_ptr<HostBuffer<T>> u = winograd_filters(W.data<T>(), M, C);
    f.u = u->data();
    if (constant) {
      kept_w_ = W.storage();
      kept_shape_ = W.shape();
      kept_u_ = std::move(u);
    } else {
      f.owned = std::move(u);
    }
    return f;
  }

  WindowAttrs attrs_;
  int64_t group_;
  std::shared_ptr<Storage> kept_w_;  // the constant W whose filters kept_u_ holds
  Shape kept_shape_;
  std::unique_ptr<HostBuffer<T>> kept_u_;
};

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add(OpId::Conv, Device::CPU, DType::F32, kernel_factory<ConvKernel<float>>());
  r.add(OpId::Conv, Device::CPU, kLowFloats, in_fp32(kernel_factory<ConvKernel<float>>()));
  r.add(OpId::Conv, Device::CPU, DType::F64, kernel_factory<ConvKernel<double>>());
  register_conv_transpose(r);
}

}  // namespace oat::cpu
