// ConvGrad(dY, X, W) -> (dX, dW, dB): the gradient of Conv (conv.cc), with the Conv node's
// attributes (group, strides, pads, dilations, auto_pad, kernel_shape). Only the outputs the graph
// asks for are computed (the autodiff pass omits the others).
//
//   dB[m]  = Σ_n Σ_o dY[n, m, o]
//   dW_g   = Σ_n dY_ng · im2col(X_ng)ᵀ          (Mg x Cg·k; the GEMM's depth is the positions)
//   dX_ng  = col2im(W_gᵀ · dY_ng)                (the adjoint of im2col adds the columns back)
//
// The GEMMs run over tiles of (image, position) columns (grad_conv_backward.h): a task is one
// group and a run of images, tasks run in parallel with per-thread dW accumulators, and one
// tile's im2col block is reused for W_gᵀ · dY once dW has consumed it. A pointwise conv (1x1,
// stride 1, no pads) reads X and writes dX directly. Depthwise convs (group == C, one input
// channel per group) use direct loops over the taps instead, and so does dW of any conv with
// one input channel per group (grad_conv_direct.h):
//   dW[m, t] = Σ_n Σ_o dY[n, m, o] · X[n, m / mult, o·stride - pad + t·dil]
//   dX[n, c, o·stride - pad + t·dil] += Σ_{m : m / mult = c} W[m, t] · dY[n, m, o]
// The GEMMs are conv_im2col.h's strided_gemm (gemm_packed.h for float, Eigen otherwise), which
// reads colᵀ and W_gᵀ in place. For a 3x3 stride-1 conv with 16-256 channels both are Winograd
// instead: dX a Winograd conv of dY (winograd_data_gradient below), dW the adjoint of the
// forward transforms (grad_conv_winograd.h).
// grad_type = 1 (FLOAT; runtime/grad_type.h): dW and dB in float32; with F16/BF16 operands they
// are the FP32 kernel's accumulation itself (low_precision.h in_fp32), not rounded to 16 bits.
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 GEMM packing; it must be
// silenced before the first include pulls in immintrin.h (as in conv.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/conv_winograd.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"
#include "runtime/cpu/kernels/grad_conv_direct.h"
#include "runtime/cpu/kernels/grad_conv_winograd.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

void register_grad_conv_transpose(KernelRegistry& r);  // grad_conv_transpose.cc
void register_grad_pool(KernelRegistry& r);            // grad_pool.cc

namespace {

template <class T>
void depthwise_backward(const T* dy, const T* x, const T* wt, T* dx, T* dw, int64_t N, int64_t C,
                        int64_t M, const Window3& w) {
  const int64_t mult = M / C, P = w.out_size(), plane = w.in_size(), ks = w.k_size();
  const int64_t OD = w.out[0], OH = w.out[1], OW = w.out[2], sx = w.stride[2];
  // Visits every (tap, output row) pair that reads real input: f(tap, xo, yo, x0, x1), where
  // output ox in [x0, x1) of the row at plane offset yo reads input plane offset xo + ox·stride.
  auto for_rows = [&](auto&& f) {
    for (int64_t a = 0; a < w.k[0]; ++a)
      for (int64_t b = 0; b < w.k[1]; ++b)
        for (int64_t e = 0; e < w.k[2]; ++e) {
          const int64_t off_x = e * w.dil[2] - w.pad[2];
          int64_t x0, x1;
          valid_range(off_x, sx, w.in[2], OW, &x0, &x1);
          const int64_t tap = (a * w.k[1] + b) * w.k[2] + e;
          for (int64_t oz = 0; oz < OD; ++oz) {
            const int64_t iz = oz * w.stride[0] - w.pad[0] + a * w.dil[0];
            if (iz < 0 || iz >= w.in[0]) continue;
            for (int64_t oy = 0; oy < OH; ++oy) {
              const int64_t iy = oy * w.stride[1] - w.pad[1] + b * w.dil[1];
              if (iy < 0 || iy >= w.in[1]) continue;
              f(tap, (iz * w.in[1] + iy) * w.in[2] + off_x, (oz * OH + oy) * OW, x0, x1);
            }
          }
        }
  };
  if (dx) {
#pragma omp parallel for schedule(static) if (N * M * P * ks > (1 << 15))
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      T* dxp = dx + nc * plane;
      std::fill(dxp, dxp + plane, T(0));
      for (int64_t m = c * mult; m < (c + 1) * mult; ++m) {
        const T* dyp = dy + (n * M + m) * P;
        const T* wm = wt + m * ks;
        for_rows([&](int64_t tap, int64_t xo, int64_t yo, int64_t x0, int64_t x1) {
          const T wv = wm[tap];
          const T* yr = dyp + yo;
          if (sx == 1) {
            T* xr = dxp + (xo + x0);
            for (int64_t k = 0; k < x1 - x0; ++k) xr[k] += wv * yr[x0 + k];
          } else {
            for (int64_t ox = x0; ox < x1; ++ox) dxp[xo + ox * sx] += wv * yr[ox];
          }
        });
      }
    }
  }
  if (dw) {
#pragma omp parallel for schedule(static) if (N * M * P * ks > (1 << 15))
    for (int64_t m = 0; m < M; ++m) {
      T* dwm = dw + m * ks;
      std::fill(dwm, dwm + ks, T(0));
      for (int64_t n = 0; n < N; ++n) {
        const T* xc = x + (n * C + m / mult) * plane;
        const T* dyp = dy + (n * M + m) * P;
        for_rows([&](int64_t tap, int64_t xo, int64_t yo, int64_t x0, int64_t x1) {
          const T* yr = dyp + yo;
          T acc = T(0);
          if (sx == 1) {
            const T* xr = xc + (xo + x0);
            for (int64_t k = 0; k < x1 - x0; ++k) acc += yr[x0 + k] * xr[k];
          } else {
            for (int64_t ox = x0; ox < x1; ++ox) acc += yr[ox] * xc[xo + ox * sx];
          }
          dwm[tap] += acc;
        });
      }
    }
  }
}

// The im2col + GEMM path (see the top of the file).
template <class T>
void gemm_backward(const T* dy, const T* x, const T* wt, T* dx, T* dw, int64_t N, int64_t C,
                   int64_t M, int64_t G, const Window3& w) {
  const int64_t Cg = C / G, Mg = M / G, K = Cg * w.k_size(), P = w.out_size();
  const int64_t plane = w.in_size(), threads = num_threads();
  const bool pointwise = w.is_pointwise();
  const BackwardTiles tiles = backward_tiles(N, P, K, Mg, G, threads);
  const int64_t tasks = G * tiles.chunks;
  if (dw) std::fill(dw, dw + M * K, T(0));
  ThreadAccumulators<T> acc(dw, M * K, dw && threads > 1 && tasks >= threads ? threads : 1);
  run_backward_tasks(tasks, threads, [&](int64_t t, bool inside) {
    const int64_t g = t / tiles.chunks, j = t % tiles.chunks;
    const int64_t n0 = j * tiles.images, n1 = std::min(N, n0 + tiles.images);
    const T* wg = wt + g * Mg * K;  // W_g: Mg x K
    T* dwg = dw ? acc.mine() + g * Mg * K : nullptr;
    auto x_of = [&](int64_t n) { return x + (n * C + g * Cg) * plane; };
    auto dx_of = [&](int64_t n) { return dx + (n * C + g * Cg) * plane; };
    if (dx)
      for (int64_t n = n0; n < n1; ++n) std::fill(dx_of(n), dx_of(n) + Cg * plane, T(0));
    if (n1 - n0 == 1) {  // one image, `width` positions at a time
      const int64_t n = n0;
      const T* dyg = dy + (n * M + g * Mg) * P;
      for (int64_t p0 = 0; p0 < P; p0 += tiles.width) {
        const int64_t width = std::min(P, p0 + tiles.width) - p0;
        const T* d = dyg + p0;  // D: Mg x width, rows P apart
        T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
        if (dwg) {
          const T* col = x_of(n) + p0;  // pointwise: X is its own column matrix
          int64_t ld = P;
          if (!pointwise) {
            im2col(x_of(n), Cg, w, p0, p0 + width, buf, width, inside);
            col = buf;
            ld = width;
          }
          strided_gemm(d, P, false, col, ld, true, dwg, K, Mg, K, width, true);  // dW_g += D · colᵀ
        }
        if (dx) {
          if (pointwise) {
            strided_gemm(wg, K, true, d, P, false, dx_of(n) + p0, P, Cg, width, Mg, true);
          } else {
            strided_gemm(wg, K, true, d, P, false, buf, width, K, width, Mg, false);  // W_gᵀ · D
            col2im_range(buf, width, Cg, w, p0, p0 + width, dx_of(n), inside);
          }
        }
      }
      return;
    }
    // Images [n0, n1) side by side: col is K x (images·P), D holds their dY rows.
    const int64_t width = (n1 - n0) * P;
    T* buf = thread_scratch<T, 0>(static_cast<size_t>(K * width));
    T* d = thread_scratch<T, 1>(static_cast<size_t>(Mg * width));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t m = 0; m < Mg; ++m) {
        const T* src = dy + (n * M + g * Mg + m) * P;
        std::copy(src, src + P, d + m * width + (n - n0) * P);
      }
    if (dwg) {
      for (int64_t n = n0; n < n1; ++n)
        im2col_image(x_of(n), Cg, w, buf + (n - n0) * P, width, inside);
      // dW_g += D · colᵀ
      strided_gemm(d, width, false, buf, width, true, dwg, K, Mg, K, width, true);
    }
    if (dx) {
      strided_gemm(wg, K, true, d, width, false, buf, width, K, width, Mg, false);  // W_gᵀ · D
      for (int64_t n = n0; n < n1; ++n)
        col2im_image(buf + (n - n0) * P, width, Cg, w, dx_of(n), inside);
    }
  });
  if (dw) acc.finish();
}

// dX of a 3x3, stride-1 conv is itself a 3x3, stride-1 conv: of dY, with the filters flipped
// and their channels swapped, and begin pads 2 - pad:
//   dX[n, c, y, x] = Σ_{m, i, j} dY[n, m, y - (2 - pt) + i, x - (2 - pl) + j] · W'[c, m, i, j],
//   W'[c, m, i, j] = W[m, c, 2 - i, 2 - j]
// (dY read as 0 outside), so Winograd F(2x2, 3x3) (conv_winograd.h) computes it with 2.25x
// fewer multiplications than the GEMM. Whether it applies: `wd` is that conv's window.
inline bool winograd_data_gradient(const Window3& w, int64_t G, int64_t C, int64_t M, Window3* wd) {
  if (w.nd != 2 || G != 1 || w.pad[1] > 2 || w.pad[2] > 2) return false;
  *wd = w;
  for (int d = 1; d < 3; ++d) {
    wd->in[d] = w.out[d];
    wd->out[d] = w.in[d];
    wd->pad[d] = 2 - w.pad[d];
    wd->pad_end[d] = w.in[d] + 2 - w.out[d] - wd->pad[d];
  }
  return winograd_applies(w, G, C, M) && winograd_applies(*wd, 1, M, C);
}

template <class T>
void winograd_backward_data(const T* dy, const T* wt, T* dx, int64_t N, int64_t C, int64_t M,
                            const Window3& wd) {
  HostBuffer<T> flipped(static_cast<size_t>(C * M * 9));  // W' (C x M x 3 x 3)
  T* f = flipped.data();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int t = 0; t < 9; ++t) f[(c * M + m) * 9 + t] = wt[(m * C + c) * 9 + 8 - t];
  conv_winograd(dy, f, static_cast<const T*>(nullptr), dx, N, M, C, wd, num_threads());
}

template <class T>
class ConvGradKernel : public OpKernel {
 public:
  explicit ConvGradKernel(const Node& node)
      : attrs_(parse_window_attrs(node)), group_(node.attr_int("group", 1)) {
    check_weight_grad_type(node, std::is_same_v<T, double> ? DType::F64 : DType::F32);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dY = ctx.input(0);
    const Tensor& X = ctx.input(1);
    const Tensor& W = ctx.input(2);
    check_conv_ranks(ctx, X.shape(), W.shape());
    if (dY.dtype() != X.dtype() || W.dtype() != X.dtype())
      ctx.fail(cat("dY, X and W must share a dtype (dY is ", dtype_name(dY.dtype()), ", X ",
                   dtype_name(X.dtype()), ", W ", dtype_name(W.dtype()), ")"));
    const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), G = group_;
    check_conv_groups(ctx, X.shape(), W.shape(), G);
    const std::vector<int64_t> kernel = conv_kernel_of(ctx, attrs_.kernel_shape, W.shape());
    const Window3 w = forward_window(ctx, attrs_, X.shape(), kernel);
    Shape y_shape = {N, M};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    if (dY.shape() != y_shape)
      ctx.fail(cat("dY ", shape_str(dY.shape()), " does not match the Conv output ",
                   shape_str(y_shape), " of X ", shape_str(X.shape()), " and W ",
                   shape_str(W.shape())));

    const T* dy = dY.data<T>();
    T *dx, *dw;
    if (!conv_grad_outputs(ctx, X, W, dy, N, M, w.out_size(), dx, dw)) return;
    const T* x = X.data<T>();
    const T* wt = W.data<T>();
    if (G == C && W.dim(1) == 1 && G > 1) return depthwise_backward(dy, x, wt, dx, dw, N, C, M, w);
    // 3x3 stride-1 convs of 16-256 channels: dX and dW by Winograd (float and double: the
    // transforms lose accuracy in 16-bit types), whatever is left by the GEMMs below.
    constexpr bool kWinogradType = std::is_same_v<T, float> || std::is_same_v<T, double>;
    Window3 wd;
    if (kWinogradType && dx && winograd_data_gradient(w, G, C, M, &wd)) {
      winograd_backward_data(dy, wt, dx, N, C, M, wd);
      dx = nullptr;
    }
    if (kWinogradType && dw && winograd_applies(w, G, C, M)) {  // grad_conv_winograd.h
      winograd_weight_gradient(x, dy, dw, N, C, M, w, num_threads());
      dw = nullptr;
    }
    if (!dx && !dw) return;
    if (dw && direct_weight_gradient_applies(w, C, G, M)) {  // one input channel: no im2col
      direct_weight_gradient(dy, x, dw, N, C, M, w, num_threads());
      if (dx) gemm_backward(dy, x, wt, dx, static_cast<T*>(nullptr), N, C, M, G, w);
      return;
    }
    gemm_backward(dy, x, wt, dx, dw, N, C, M, G, w);
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

void register_grad_conv(KernelRegistry& r) {
  r.add(OpId::ConvGrad, Device::CPU, DType::F32, kernel_factory<ConvGradKernel<float>>());
  r.add(OpId::ConvGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<ConvGradKernel<float>>(), weight_grad_io));
  r.add(OpId::ConvGrad, Device::CPU, DType::F64, kernel_factory<ConvGradKernel<double>>());
  register_grad_conv_transpose(r);
  register_grad_pool(r);
}

}  // namespace oat::cpu
