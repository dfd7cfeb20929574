// What signal.cc hands signal_impl.cu: plain geometry (see runtime/cpu/kernels/dft.cc for the
// transforms; here each output is a direct sum in double over a twiddle table).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Lines of a DFT along one axis. src element (o, s, i, c) at ((o·n_src + s)·inner + i)·c_src + c,
// dst element (o, d, i, c) at ((o·n_dst + d)·inner + i)·c_dst + c. For d < n_valid:
//   v[d] = scale · m_d · Σ_{s < n_sum} a(s) · tw[(s·d) mod len]     (complex, double)
//   a(s) = src[s] (s < n_read; imaginary 0 when c_src = 1),
//          conj(src[len − s]) when mirror, s > len/2 and len − s < n_read (irfft), else 0;
//   m_d = 2 when double_bins, d ≥ 1 and len − d > len/2 (DFTGrad of irfft), else 1;
// dst = Re v (and Im v when c_dst = 2); 0 for d ≥ n_valid.
struct DftLines {
  int64_t outer = 1, inner = 1, len = 1;
  int64_t n_src = 0, c_src = 1, n_read = 0, n_sum = 0;
  int64_t n_dst = 0, c_dst = 2, n_valid = 0;
  bool mirror = false, double_bins = false;
  double scale = 1.0;
};
// `tw`: [len, 2] doubles, (cos, sin) of ±2π m / len.
void launch_dft_lines(ElemType t, const DftLines& p, const void* src, const double* tw, void* dst,
                      cudaStream_t s);

// STFT frames: Y[b, f, k] = Σ_{n<len} x[b, f·step + n] w[n] tw[(k·n) mod len], k < bins
// (w = 1 when `window` is null); x [batch, s_len, c_in], Y [batch, frames, bins, 2].
struct StftFrames {
  int64_t batch = 0, s_len = 0, c_in = 1, step = 1, len = 1, frames = 0, bins = 0;
};
void launch_stft(ElemType t, const StftFrames& p, const void* x, const void* window,
                 const double* tw, void* y, cudaStream_t s);

// STFTGrad: A[b, f, n] = Σ_{k<bins} dY[b, f, k] tw[(k·n) mod len] (tw of +2π; `a` is
// [batch·frames·len, 2] doubles), then
//   dx[b, p] = Σ_{f: 0 ≤ p − f·step < len} w[n] A[b, f, n], n = p − f·step (f ascending; the
//              real part, and the imaginary part for a complex signal),
//   dw[n]    = Σ_b Σ_f Re(conj(x[b, f·step + n]) A[b, f, n])   (when dw is not null).
void launch_stft_grad(ElemType t, const StftFrames& p, const void* dy, const void* x,
                      const void* window, const double* tw, double* a, void* dx, void* dw,
                      cudaStream_t s);

}  // namespace oat::cuda
