// DFT (opsets 17, 20) and STFT (17). Complex values are pairs in the last dimension ([.., 2]); a
// real signal has [.., 1]. Transforms run in double (std::complex<double>) for F32/F64, F16/BF16
// through FP32 copies (in_fp32), and round once to the output type.
//
// DFT of length L along `axis` (opset 17: attribute, default 1; opset 20: input 2, default −2;
// negative counts from the back, the last (complex) dimension is not allowed):
//   forward: Y[k] = Σ_{n<L} x[n] e^{−2πi kn/L}, k < L (onesided: k ≤ L/2)
//   inverse: y[n] = (1/L) Σ_{k<L} X[k] e^{+2πi kn/L}
//   inverse + onesided (numpy's irfft): X[0..L/2] is extended by X[L−k] = conj(X[k]) and the real
//     part of the inverse is returned as [.., L, 1].
// L = dft_length (input 1) or the axis' length (inverse + onesided: 2 (n − 1)); the input is cut
// to L, or padded with zeros, along the axis first (numpy.fft's n). As ONNX's reference, onesided
// on a complex forward input just keeps k ≤ L/2.
//
// STFT(signal [B, S, 1|2], frame_step s, window [W]?, frame_length?; onesided, default 1):
//   L = frame_length, else W; frames F = 1 + (S − L) / s
//   Y[b, f, k] = Σ_{n<L} x[b, f·s + n] w[n] e^{−2πi kn/L} (w = 1 without a window), k < L or ≤ L/2
//   -> [B, F, L or L/2 + 1, 2].
//
// FFT: iterative radix-2 (Cooley-Tukey) when L is a power of two; otherwise Bluestein's chirp z:
//   c[k] = e^{∓iπ k²/L}, X[k] = c[k] · Σ_n (x[n] c[n]) conj(c[k − n]), the convolution done by
//   radix-2 FFTs of length M ≥ 2L − 1 (O(L log L) for every L). k² is reduced mod 2L first.
// Gradients: DFTGrad and STFTGrad below (the adjoint maps; train/autodiff/grads/signal.cc).
// On CUDA both run on the host (runtime/cuda/README.md, "Host-placed ops").
#include <cmath>
#include <complex>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/dft_args.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

using C = std::complex<double>;

// On the CPU every input is a host tensor.
auto host_read(const KernelContext& ctx) {
  return [&ctx](int i) { return ctx.input(i); };
}

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place radix-2 FFT of a power-of-two length; sign −1 forward, +1 inverse (unnormalised).
class Radix2 {
 public:
  Radix2(int64_t n, int sign) : n_(n), rev_(static_cast<size_t>(n)), w_(static_cast<size_t>(n / 2)) {
    int bits = 0;
    while ((int64_t{1} << bits) < n) ++bits;
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      rev_[i] = r;
    }
    for (int64_t k = 0; k < n / 2; ++k) {
      const double t = sign * 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
      w_[k] = C(std::cos(t), std::sin(t));
    }
  }
  void run(C* a) const {
    for (int64_t i = 0; i < n_; ++i)
      if (i < rev_[i]) std::swap(a[i], a[rev_[i]]);
    for (int64_t len = 2; len <= n_; len <<= 1) {
      const int64_t half = len / 2, stride = n_ / len;
      for (int64_t s = 0; s < n_; s += len)
        for (int64_t j = 0; j < half; ++j) {
          const C u = a[s + j], v = a[s + j + half] * w_[j * stride];
          a[s + j] = u + v;
          a[s + j + half] = u - v;
        }
    }
  }

 private:
  int64_t n_;
  std::vector<int64_t> rev_;
  std::vector<C> w_;
};

// Unnormalised DFT of any length L >= 1 (sign −1 forward, +1 inverse); one plan per kernel run,
// shared (read-only) by the threads, each with its own scratch.
class Fft {
 public:
  Fft(int64_t n, int sign) : n_(n), m_(1), fwd_(1, -1), inv_(1, 1) {
    if (is_pow2(n)) {
      fwd_ = Radix2(n, sign);
      return;
    }
    while (m_ < 2 * n - 1) m_ <<= 1;
    fwd_ = Radix2(m_, -1);
    inv_ = Radix2(m_, 1);
    chirp_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t k2 = (k * k) % (2 * n);
      const double t = sign * M_PI * static_cast<double>(k2) / static_cast<double>(n);
      chirp_[k] = C(std::cos(t), std::sin(t));
    }
    kernel_.assign(static_cast<size_t>(m_), C(0, 0));
    for (int64_t k = 0; k < n; ++k) {
      kernel_[k] = std::conj(chirp_[k]);
      if (k > 0) kernel_[m_ - k] = std::conj(chirp_[k]);
    }
    fwd_.run(kernel_.data());
  }
  int64_t scratch_size() const { return is_pow2(n_) ? 0 : m_; }
  // a: n values in, their transform out; scratch: scratch_size() values.
  void run(C* a, std::vector<C>& scratch) const {
    if (is_pow2(n_)) {
      fwd_.run(a);
      return;
    }
    scratch.assign(static_cast<size_t>(m_), C(0, 0));
    for (int64_t k = 0; k < n_; ++k) scratch[k] = a[k] * chirp_[k];
    fwd_.run(scratch.data());
    for (int64_t k = 0; k < m_; ++k) scratch[k] *= kernel_[k];
    inv_.run(scratch.data());
    const double inv_m = 1.0 / static_cast<double>(m_);
    for (int64_t k = 0; k < n_; ++k) a[k] = scratch[k] * inv_m * chirp_[k];
  }

 private:
  int64_t n_, m_;
  Radix2 fwd_, inv_;
  std::vector<C> chirp_, kernel_;
};

template <class T>
void dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool v20 = ctx.node().opset >= 20;
  const DftGeom g = dft_geom(ctx, x, 1, v20 ? 2 : -1, v20 ? -2 : 1, host_read(ctx));
  Tensor& y = ctx.allocate_output(0, x.dtype(), dft_output_shape(x, g));
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const Fft fft(g.len, g.inverse ? 1 : -1);
  const double scale = g.inverse ? 1.0 / static_cast<double>(g.len) : 1.0;
  const int64_t len = g.len, inner = g.inner;
  parallel_chunks(g.outer * inner, y.numel() * 8 >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
    std::vector<C> a(static_cast<size_t>(len)), scratch;
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / inner, i = line % inner;
      const T* src = xp + (o * g.n_in * inner + i) * g.c_in;
      std::fill(a.begin(), a.end(), C(0, 0));
      for (int64_t n = 0; n < g.n_read; ++n) {
        const T* p = src + n * inner * g.c_in;
        a[n] = C(static_cast<double>(p[0]), g.c_in == 2 ? static_cast<double>(p[1]) : 0.0);
      }
      if (g.irfft)
        for (int64_t k = 1; k < g.n_read && len - k > len / 2; ++k) a[len - k] = std::conj(a[k]);
      fft.run(a.data(), scratch);
      T* dst = yp + (o * g.n_out * inner + i) * g.c_out;
      for (int64_t k = 0; k < g.n_out; ++k) {
        T* q = dst + k * inner * g.c_out;
        q[0] = static_cast<T>(a[k].real() * scale);
        if (g.c_out == 2) q[1] = static_cast<T>(a[k].imag() * scale);
      }
    }
  });
}

// DFTGrad(dY, X, dft_length?, axis?) -> dX, the adjoint of the real-linear map X -> Y (the
// forward's attributes; axis an attribute, or input 3 for opset 20's axis input):
//   forward:  dX[n] = Σ_{k<n_out} dY[k] e^{+2πi kn/L} for n < min(n, L), 0 past L (dY zero-padded
//             to L, an unnormalised inverse FFT); a real X takes the real part.
//   inverse:  dX[k] = (1/L) Σ_{n<L} dY[n] e^{−2πi kn/L}.
//   irfft:    dX[k] = m_k (1/L) Σ_n dy[n] e^{−2πi kn/L}, m_k = 2 for the bins mirrored into
//             X[L−k] (1 ≤ k, L − k > L/2), else 1 (the imaginary parts of X[0] and X[L/2] get
//             Im of a real signal's DFT there: 0, as they do not reach y).
template <class T>
void dft_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const DftGeom g = dft_geom(ctx, x, 2, 3, 1, host_read(ctx));
  if (dy.shape() != dft_output_shape(x, g))
    ctx.fail(cat("dY ", shape_str(dy.shape()), " is not the forward's output shape ",
                 shape_str(dft_output_shape(x, g))));
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
  const T* gp = dy.data<T>();
  T* dp = dx.data<T>();
  const Fft fft(g.len, g.inverse ? -1 : 1);
  const double scale = g.inverse ? 1.0 / static_cast<double>(g.len) : 1.0;
  const int64_t len = g.len, inner = g.inner;
  parallel_chunks(g.outer * inner, x.numel() * 8 >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
    std::vector<C> a(static_cast<size_t>(len)), scratch;
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / inner, i = line % inner;
      const T* src = gp + (o * g.n_out * inner + i) * g.c_out;
      std::fill(a.begin(), a.end(), C(0, 0));
      for (int64_t k = 0; k < g.n_out; ++k) {
        const T* p = src + k * inner * g.c_out;
        a[k] = C(static_cast<double>(p[0]), g.c_out == 2 ? static_cast<double>(p[1]) : 0.0);
      }
      fft.run(a.data(), scratch);
      T* dst = dp + (o * g.n_in * inner + i) * g.c_in;
      for (int64_t n = 0; n < g.n_in; ++n) {
        T* q = dst + n * inner * g.c_in;
        C v(0, 0);
        if (n < g.n_read) {
          v = a[n] * scale;
          if (g.irfft && n >= 1 && len - n > len / 2) v *= 2.0;
        }
        q[0] = static_cast<T>(v.real());
        if (g.c_in == 2) q[1] = static_cast<T>(v.imag());
      }
    }
  });
}

template <class T>
void stft_kernel(KernelContext& ctx) {
  const StftGeom g = stft_geom(ctx, 0, host_read(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor* w = ctx.input_or_null(2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {g.batch, g.frames, g.bins, 2});
  const T* xp = x.data<T>();
  const T* wp = w ? w->data<T>() : nullptr;
  T* yp = y.data<T>();
  const Fft fft(g.len, -1);
  parallel_chunks(g.batch * g.frames, y.numel() * 8 >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
    std::vector<C> a(static_cast<size_t>(g.len)), scratch;
    for (int64_t bf = begin; bf < end; ++bf) {
      const int64_t b = bf / g.frames, f = bf % g.frames;
      const T* src = xp + (b * g.s_len + f * g.step) * g.c_in;
      for (int64_t n = 0; n < g.len; ++n) {
        const double wn = wp ? static_cast<double>(wp[n]) : 1.0;
        a[n] = C(static_cast<double>(src[n * g.c_in]) * wn,
                 g.c_in == 2 ? static_cast<double>(src[n * g.c_in + 1]) * wn : 0.0);
      }
      fft.run(a.data(), scratch);
      T* dst = yp + bf * g.bins * 2;
      for (int64_t k = 0; k < g.bins; ++k) {
        dst[2 * k] = static_cast<T>(a[k].real());
        dst[2 * k + 1] = static_cast<T>(a[k].imag());
      }
    }
  });
}

// STFTGrad(dY, signal, frame_step, window?, frame_length?) -> dSignal, dWindow. Per frame
// A[n] = Σ_{k<bins} dY[b, f, k] e^{+2πi kn/L} (dY zero-padded to L, unnormalised inverse FFT):
//   dx[b, f·s + n] += w[n] A[n] (real part; and the imaginary part for a complex signal)
//   dw[n] = Σ_{b,f} Re(conj(x[b, f·s + n]) A[n]) (w = 1 without a window; no dWindow then).
// Frames overlap: the A of all frames are computed in parallel, then summed in order.
template <class T>
void stft_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const StftGeom g = stft_geom(ctx, 1, host_read(ctx));
  const Tensor& x = ctx.input(1);
  const Tensor* w = ctx.input_or_null(3);
  if (dy.shape() != Shape{g.batch, g.frames, g.bins, 2})
    ctx.fail(cat("dY ", shape_str(dy.shape()), " is not the forward's output shape ",
                 shape_str(Shape{g.batch, g.frames, g.bins, 2})));
  const T* gp = dy.data<T>();
  const T* xp = x.data<T>();
  const T* wp = w ? w->data<T>() : nullptr;
  std::vector<C> all(static_cast<size_t>(g.batch * g.frames * g.len));
  const Fft fft(g.len, 1);
  parallel_chunks(g.batch * g.frames, all.size() * 4 >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
    std::vector<C> scratch;
    for (int64_t bf = begin; bf < end; ++bf) {
      C* a = all.data() + bf * g.len;
      for (int64_t k = 0; k < g.bins; ++k)
        a[k] = C(static_cast<double>(gp[(bf * g.bins + k) * 2]),
                 static_cast<double>(gp[(bf * g.bins + k) * 2 + 1]));
      fft.run(a, scratch);
    }
  });
  std::vector<double> dx(static_cast<size_t>(x.numel()), 0.0), dw(static_cast<size_t>(g.len), 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t f = 0; f < g.frames; ++f) {
      const C* a = all.data() + (b * g.frames + f) * g.len;
      const int64_t base = (b * g.s_len + f * g.step) * g.c_in;
      for (int64_t n = 0; n < g.len; ++n) {
        const double wn = wp ? static_cast<double>(wp[n]) : 1.0;
        const int64_t at = base + n * g.c_in;
        dx[at] += wn * a[n].real();
        double xr = static_cast<double>(xp[at]), xi = 0.0;
        if (g.c_in == 2) {
          dx[at + 1] += wn * a[n].imag();
          xi = static_cast<double>(xp[at + 1]);
        }
        dw[n] += xr * a[n].real() + xi * a[n].imag();
      }
    }
  Tensor& dxt = ctx.allocate_output(0, x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) dxt.data<T>()[i] = static_cast<T>(dx[i]);
  if (ctx.output_requested(1)) {
    if (!w) ctx.fail("dWindow asked for, but the STFT has no window input");
    Tensor& dwt = ctx.allocate_output(1, x.dtype(), {g.len});
    for (int64_t n = 0; n < g.len; ++n) dwt.data<T>()[n] = static_cast<T>(dw[n]);
  }
}

}  // namespace

void register_dft(KernelRegistry& r) {
  r.add(OpId::DFT, Device::CPU, DType::F32, function_kernel(dft_kernel<float>));
  r.add(OpId::DFT, Device::CPU, kLowFloats, in_fp32(function_kernel(dft_kernel<float>)));
  r.add(OpId::DFT, Device::CPU, DType::F64, function_kernel(dft_kernel<double>));
  r.add(OpId::STFT, Device::CPU, DType::F32, function_kernel(stft_kernel<float>));
  r.add(OpId::STFT, Device::CPU, kLowFloats, in_fp32(function_kernel(stft_kernel<float>)));
  r.add(OpId::STFT, Device::CPU, DType::F64, function_kernel(stft_kernel<double>));
  // The adjoints, keyed by dY's dtype.
  r.add(OpId::DFTGrad, Device::CPU, DType::F32, function_kernel(dft_grad_kernel<float>));
  r.add(OpId::DFTGrad, Device::CPU, kLowFloats, in_fp32(function_kernel(dft_grad_kernel<float>)));
  r.add(OpId::DFTGrad, Device::CPU, DType::F64, function_kernel(dft_grad_kernel<double>));
  r.add(OpId::STFTGrad, Device::CPU, DType::F32, function_kernel(stft_grad_kernel<float>));
  r.add(OpId::STFTGrad, Device::CPU, kLowFloats, in_fp32(function_kernel(stft_grad_kernel<float>)));
  r.add(OpId::STFTGrad, Device::CPU, DType::F64, function_kernel(stft_grad_kernel<double>));
}

}  // namespace oat::cpu
