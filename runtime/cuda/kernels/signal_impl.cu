// DFT, STFT and STFTGrad as direct sums in double (signal_impl.h): O(L) per output, no FFT
// (cuFFT would be the next step for long transforms). One thread per output element; every sum
// runs in the CPU kernels' order where they accumulate (STFTGrad's overlapping frames, f
// ascending), so results differ from the CPU's FFT only by double rounding before the final one.
#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/signal_impl.h"

namespace oat::cuda {

namespace {

template <class T>
__global__ void dft_lines_kernel(const T* src, const double* tw, T* dst, DftLines p) {
  const int64_t n = p.outer * p.n_dst * p.inner;
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t i = e % p.inner, d = (e / p.inner) % p.n_dst, o = e / (p.inner * p.n_dst);
    double re = 0.0, im = 0.0;
    if (d < p.n_valid) {
      for (int64_t s = 0; s < p.n_sum; ++s) {
        int64_t at = -1;
        double sign = 1.0;
        if (s < p.n_read) {
          at = s;
        } else if (p.mirror && s > p.len / 2 && p.len - s < p.n_read) {
          at = p.len - s;
          sign = -1.0;  // the conjugate
        }
        if (at < 0) continue;
        const T* q = src + ((o * p.n_src + at) * p.inner + i) * p.c_src;
        const double ar = static_cast<double>(to_float(q[0]));
        const double ai = p.c_src == 2 ? sign * static_cast<double>(to_float(q[1])) : 0.0;
        const int64_t m = (s * d) % p.len;
        const double wr = tw[2 * m], wi = tw[2 * m + 1];
        re += ar * wr - ai * wi;
        im += ar * wi + ai * wr;
      }
      double f = p.scale;
      if (p.double_bins && d >= 1 && p.len - d > p.len / 2) f *= 2.0;
      re *= f;
      im *= f;
    }
    T* q = dst + ((o * p.n_dst + d) * p.inner + i) * p.c_dst;
    q[0] = from_float<T>(static_cast<float>(re));
    if (p.c_dst == 2) q[1] = from_float<T>(static_cast<float>(im));
  }
}

template <class T>
__global__ void stft_kernel(const T* x, const T* w, const double* tw, T* y, StftFrames p) {
  const int64_t n = p.batch * p.frames * p.bins;
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t k = e % p.bins, bf = e / p.bins, f = bf % p.frames, b = bf / p.frames;
    const T* src = x + (b * p.s_len + f * p.step) * p.c_in;
    double re = 0.0, im = 0.0;
    for (int64_t t = 0; t < p.len; ++t) {
      const double wn = w ? static_cast<double>(to_float(w[t])) : 1.0;
      const double ar = static_cast<double>(to_float(src[t * p.c_in])) * wn;
      const double ai = p.c_in == 2 ? static_cast<double>(to_float(src[t * p.c_in + 1])) * wn : 0.0;
      const int64_t m = (k * t) % p.len;
      re += ar * tw[2 * m] - ai * tw[2 * m + 1];
      im += ar * tw[2 * m + 1] + ai * tw[2 * m];
    }
    y[2 * e] = from_float<T>(static_cast<float>(re));
    y[2 * e + 1] = from_float<T>(static_cast<float>(im));
  }
}

template <class T>
__global__ void stft_adjoint_kernel(const T* dy, const double* tw, double* a, StftFrames p) {
  const int64_t n = p.batch * p.frames * p.len;
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t t = e % p.len, bf = e / p.len;
    double re = 0.0, im = 0.0;
    for (int64_t k = 0; k < p.bins; ++k) {
      const double gr = static_cast<double>(to_float(dy[(bf * p.bins + k) * 2]));
      const double gi = static_cast<double>(to_float(dy[(bf * p.bins + k) * 2 + 1]));
      const int64_t m = (k * t) % p.len;
      re += gr * tw[2 * m] - gi * tw[2 * m + 1];
      im += gr * tw[2 * m + 1] + gi * tw[2 * m];
    }
    a[2 * e] = re;
    a[2 * e + 1] = im;
  }
}

template <class T>
__global__ void stft_dx_kernel(const double* a, const T* w, T* dx, StftFrames p) {
  const int64_t n = p.batch * p.s_len;
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t pos = e % p.s_len, b = e / p.s_len;
    double re = 0.0, im = 0.0;
    for (int64_t f = 0; f < p.frames; ++f) {
      const int64_t t = pos - f * p.step;
      if (t < 0 || t >= p.len) continue;
      const double wn = w ? static_cast<double>(to_float(w[t])) : 1.0;
      const double* v = a + 2 * ((b * p.frames + f) * p.len + t);
      re += wn * v[0];
      im += wn * v[1];
    }
    dx[e * p.c_in] = from_float<T>(static_cast<float>(re));
    if (p.c_in == 2) dx[e * p.c_in + 1] = from_float<T>(static_cast<float>(im));
  }
}

template <class T>
__global__ void stft_dw_kernel(const double* a, const T* x, T* dw, StftFrames p) {
  OAT_GRID_STRIDE_LOOP(t, p.len) {
    double sum = 0.0;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t f = 0; f < p.frames; ++f) {
        const int64_t at = (b * p.s_len + f * p.step + t) * p.c_in;
        const double* v = a + 2 * ((b * p.frames + f) * p.len + t);
        const double xr = static_cast<double>(to_float(x[at]));
        const double xi = p.c_in == 2 ? static_cast<double>(to_float(x[at + 1])) : 0.0;
        sum += xr * v[0] + xi * v[1];
      }
    dw[t] = from_float<T>(static_cast<float>(sum));
  }
}

}  // namespace

void launch_dft_lines(ElemType t, const DftLines& p, const void* src, const double* tw, void* dst,
                      cudaStream_t s) {
  const int64_t n = p.outer * p.n_dst * p.inner;
  if (n == 0) return;
  dispatch_float(t, "DFT", [&](auto tag) {
    using T = decltype(tag);
    dft_lines_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(src), tw,
                                                           static_cast<T*>(dst), p);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_stft(ElemType t, const StftFrames& p, const void* x, const void* window,
                 const double* tw, void* y, cudaStream_t s) {
  const int64_t n = p.batch * p.frames * p.bins;
  if (n == 0) return;
  dispatch_float(t, "STFT", [&](auto tag) {
    using T = decltype(tag);
    stft_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                      static_cast<const T*>(window), tw,
                                                      static_cast<T*>(y), p);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_stft_grad(ElemType t, const StftFrames& p, const void* dy, const void* x,
                      const void* window, const double* tw, double* a, void* dx, void* dw,
                      cudaStream_t s) {
  dispatch_float(t, "STFTGrad", [&](auto tag) {
    using T = decltype(tag);
    const int64_t na = p.batch * p.frames * p.len, nx = p.batch * p.s_len;
    if (na > 0) {
      stft_adjoint_kernel<T><<<blocks_for(na), kThreads, 0, s>>>(static_cast<const T*>(dy), tw, a,
                                                                 p);
      CUDA_CHECK_LAUNCH();
    }
    if (nx > 0) {
      stft_dx_kernel<T><<<blocks_for(nx), kThreads, 0, s>>>(a, static_cast<const T*>(window),
                                                            static_cast<T*>(dx), p);
      CUDA_CHECK_LAUNCH();
    }
    if (dw && p.len > 0) {
      stft_dw_kernel<T><<<blocks_for(p.len), kThreads, 0, s>>>(a, static_cast<const T*>(x),
                                                               static_cast<T*>(dw), p);
      CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace oat::cuda
