// Signal generators (opset 17): HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix.
// Their inputs are integer/float scalars read on the host; the output's dtype is the attribute
// output_datatype (ONNX TensorProto code, default 1 = FLOAT). Values are computed in double and
// rounded once to the output type (cast_tensor). No gradient: nothing differentiable flows in.
//
// Windows, size S (input 0, int32/int64 scalar), n = 0..S−1, N = S if periodic (default 1), else
// S − 1 (symmetric):
//   HannWindow:     w[n] = 0.5 − 0.5 cos(2πn/N)
//   HammingWindow:  w[n] = 25/46 − 21/46 cos(2πn/N)
//   BlackmanWindow: w[n] = 0.42 − 0.5 cos(2πn/N) + 0.08 cos(4πn/N)
// A symmetric window of size 1 (N = 0, 0/0 in the formula) is [1], as numpy/torch give it.
//
// MelWeightMatrix(num_mel_bins M, dft_length L, sample_rate R, lower_edge_hertz lo,
// upper_edge_hertz hi) -> [L/2 + 1, M], the triangular filters of ONNX's reference:
//   mel(f) = 2595 log10(1 + f/700), step = (mel(hi) − mel(lo)) / (M + 2)
//   b[k] = floor((L + 1) · 700 (10^((mel(lo) + k·step)/2595) − 1) / R), k = 0..M+1 (integer bins)
//   filter i (left b[i], centre b[i+1], right b[i+2]):
//     b[i+1] == b[i] ⇒ W[b[i+1], i] = 1, else W[j, i] = (j − b[i]) / (b[i+1] − b[i]), j ∈ [b[i], b[i+1]]
//     then W[j, i] = (b[i+2] − j) / (b[i+2] − b[i+1]) for j ∈ [b[i+1], b[i+2])   (if b[i+2] > b[i+1])
// (The step divides by M + 2, the number of edges, as the reference does, not M + 1.)
#include <cmath>
#include <vector>

#include "runtime/cpu/register.h"
#include "runtime/onnx_type_code.h"

namespace oat::cpu {

namespace {

// ONNX TensorProto.DataType codes of the dtypes the runtime stores.
DType output_dtype(const KernelContext& ctx) {
  const int64_t code = ctx.node().attr_int("output_datatype", 1);
  const std::optional<DType> t = dtype_of_onnx_code(code);
  if (!t || *t == DType::Bool || *t == DType::String)  // the spec's types are numeric
    ctx.fail(cat("output_datatype ", code, " is not a type the runtime stores"));
  return *t;
}

int64_t scalar_int(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) ctx.fail(cat(what, " must be a scalar, got shape ", shape_str(t.shape())));
  if (is_floating(t.dtype())) ctx.fail(cat(what, " must be an integer"));
  return t.item_as_int(0);
}

double scalar_real(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) ctx.fail(cat(what, " must be a scalar, got shape ", shape_str(t.shape())));
  return t.item_as_double(0);
}

void emit(KernelContext& ctx, Shape shape, const std::vector<double>& v) {
  ctx.set_output(0, cast_tensor(Tensor::from_vector<double>(std::move(shape), v), output_dtype(ctx)));
}

// a0 − a1 cos(2πn/N) + a2 cos(4πn/N)
void cosine_window(KernelContext& ctx, double a0, double a1, double a2) {
  const int64_t size = scalar_int(ctx, 0, "size");
  if (size < 0) ctx.fail(cat("size must be >= 0, got ", size));
  const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  const double n_den = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  const double two_pi = 2.0 * M_PI;
  for (int64_t n = 0; n < size; ++n) {
    if (n_den == 0.0) {
      w[n] = 1.0;
      continue;
    }
    const double t = two_pi * static_cast<double>(n) / n_den;
    w[n] = a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t);
  }
  emit(ctx, {size}, w);
}

void hann_window(KernelContext& ctx) { cosine_window(ctx, 0.5, 0.5, 0.0); }
void hamming_window(KernelContext& ctx) {
  cosine_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}
void blackman_window(KernelContext& ctx) { cosine_window(ctx, 0.42, 0.5, 0.08); }

void mel_weight_matrix(KernelContext& ctx) {
  const int64_t mels = scalar_int(ctx, 0, "num_mel_bins");
  const int64_t dft_length = scalar_int(ctx, 1, "dft_length");
  const int64_t rate = scalar_int(ctx, 2, "sample_rate");
  const double lo = scalar_real(ctx, 3, "lower_edge_hertz");
  const double hi = scalar_real(ctx, 4, "upper_edge_hertz");
  if (mels < 0 || dft_length < 1 || rate <= 0)
    ctx.fail(cat("need num_mel_bins >= 0, dft_length >= 1 and sample_rate > 0, got ", mels, ", ",
                 dft_length, ", ", rate));
  if (!(lo >= 0.0 && hi >= lo))
    ctx.fail(cat("need 0 <= lower_edge_hertz <= upper_edge_hertz, got ", lo, ", ", hi));
  const int64_t bins = dft_length / 2 + 1;
  const double mel_lo = 2595.0 * std::log1p(lo / 700.0) / std::log(10.0);
  const double mel_hi = 2595.0 * std::log1p(hi / 700.0) / std::log(10.0);
  const double step = (mel_hi - mel_lo) / static_cast<double>(mels + 2);
  std::vector<int64_t> b(static_cast<size_t>(mels + 2));
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double mel = static_cast<double>(k) * step + mel_lo;
    const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
    b[k] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz /
                                           static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= bins)
      ctx.fail(cat("mel filter ", i, " reaches bin ", j, " outside [0, ", bins,
                   "): upper_edge_hertz above sample_rate / 2?"));
    return w[static_cast<size_t>(j * mels + i)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = b[i], c = b[i + 1], r = b[i + 2];
    if (c == l) {
      at(c, i) = 1.0;
    } else {
      for (int64_t j = l; j <= c; ++j)
        at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    if (r > c)
      for (int64_t j = c; j < r; ++j)
        at(j, i) = static_cast<double>(r - j) / static_cast<double>(r - c);
  }
  emit(ctx, {bins, mels}, w);
}

}  // namespace

void register_signal_window(KernelRegistry& r) {
  // Keyed by the integer size / num_mel_bins input: any dtype.
  r.add(OpId::HannWindow, Device::CPU, kAnyDType, function_kernel(hann_window));
  r.add(OpId::HammingWindow, Device::CPU, kAnyDType, function_kernel(hamming_window));
  r.add(OpId::BlackmanWindow, Device::CPU, kAnyDType, function_kernel(blackman_window));
  r.add(OpId::MelWeightMatrix, Device::CPU, kAnyDType, function_kernel(mel_weight_matrix));
}

}  // namespace oat::cpu
