// DFT's and STFT's operand checks and geometry, shared by the CPU kernels (dft.cc, formulas
// there) and the CUDA ones (runtime/cuda/kernels/signal.cc), so both fail with the same messages.
// Scalar inputs (dft_length, axis, frame_step, frame_length) are read through `read(i)`, which
// returns input i as a host tensor.
#pragma once

#include <algorithm>

#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

// A scalar integer input, read through `read(i)` (a host tensor: the input itself on the CPU,
// downloaded on CUDA).
template <class Read>
int64_t scalar_input(const KernelContext& ctx, int i, const char* what, Read&& read) {
  const Tensor t = read(i);
  if (t.numel() != 1) ctx.fail(cat(what, " must be a scalar, got shape ", shape_str(t.shape())));
  if (is_floating(t.dtype())) ctx.fail(cat(what, " must be an integer"));
  return t.item_as_int(0);
}

// The geometry of one DFT node on input X (the forward's input; DFTGrad reads the same).
// `axis_input`: the input holding the axis (opset 20's input 2, DFTGrad's input 3), or −1.
struct DftGeom {
  int64_t axis, len, n_in, n_read, n_out, c_in, c_out, outer = 1, inner = 1;
  bool inverse, onesided, irfft;
};

template <class Read>
DftGeom dft_geom(const KernelContext& ctx, const Tensor& x, int len_input, int axis_input,
                 int64_t default_axis, Read&& read) {
  const Node& node = ctx.node();
  DftGeom g{};
  const int64_t r = x.rank();
  if (r < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    ctx.fail(cat("input must be [.., 1] (real) or [.., 2] (complex), got ", shape_str(x.shape())));
  int64_t axis = axis_input >= 0 && ctx.has_input(axis_input)
                     ? scalar_input(ctx, axis_input, "axis", read)
                     : node.attr_int("axis", default_axis);
  if (axis < -r || axis > r - 2 || axis == -1)
    ctx.fail(cat("axis ", axis, " is outside [", -r, ", -2] and [0, ", r - 2, "] for input ",
                 shape_str(x.shape())));
  g.axis = axis < 0 ? axis + r : axis;
  g.inverse = node.attr_int("inverse", 0) != 0;
  g.onesided = node.attr_int("onesided", 0) != 0;
  g.irfft = g.inverse && g.onesided;
  g.n_in = x.dim(g.axis);
  g.len = g.irfft ? 2 * (g.n_in - 1) : g.n_in;
  if (ctx.has_input(len_input)) g.len = scalar_input(ctx, len_input, "dft_length", read);
  if (g.len < 1)
    ctx.fail(cat("dft_length must be >= 1, got ", g.len, " (input ", shape_str(x.shape()), ")"));
  g.n_out = g.irfft ? g.len : (g.onesided ? g.len / 2 + 1 : g.len);
  g.c_in = x.dim(-1);
  g.c_out = g.irfft ? 1 : 2;
  // irfft reads X[0..len/2] and mirrors the rest; the others read min(n_in, len) points.
  g.n_read = std::min(g.n_in, g.irfft ? g.len / 2 + 1 : g.len);
  for (int64_t d = 0; d < g.axis; ++d) g.outer *= x.dim(d);
  for (int64_t d = g.axis + 1; d < r - 1; ++d) g.inner *= x.dim(d);
  return g;
}

inline Shape dft_output_shape(const Tensor& x, const DftGeom& g) {
  Shape ys = x.shape();
  ys[g.axis] = g.n_out;
  ys.back() = g.c_out;
  return ys;
}

struct StftGeom {
  int64_t batch, s_len, c_in, step, len, frames, bins;
};

// STFT's inputs from index `first` on: signal, frame_step, window?, frame_length?.
template <class Read>
StftGeom stft_geom(const KernelContext& ctx, int first, Read&& read) {
  const Tensor& x = ctx.input(first);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    ctx.fail(cat("signal must be [batch, length, 1 or 2], got ", shape_str(x.shape())));
  StftGeom g{};
  g.step = scalar_input(ctx, first + 1, "frame_step", read);
  if (g.step < 1) ctx.fail(cat("frame_step must be >= 1, got ", g.step));
  const Tensor* w = ctx.input_or_null(first + 2);
  if (w && (w->rank() != 1 || w->dtype() != x.dtype()))
    ctx.fail(cat("window must be 1-D of the signal's type, got ", shape_str(w->shape()), " ",
                 dtype_name(w->dtype())));
  g.len = -1;
  if (ctx.has_input(first + 3)) g.len = scalar_input(ctx, first + 3, "frame_length", read);
  if (w) {
    if (g.len >= 0 && g.len != w->dim(0))
      ctx.fail(cat("frame_length ", g.len, " differs from the window's length ", w->dim(0)));
    g.len = w->dim(0);
  }
  if (g.len < 0) ctx.fail("needs a window or a frame_length");
  g.batch = x.dim(0);
  g.s_len = x.dim(1);
  g.c_in = x.dim(2);
  if (g.len < 1 || g.len > g.s_len)
    ctx.fail(cat("frame length ", g.len, " must be in [1, ", g.s_len, "] (signal ",
                 shape_str(x.shape()), ")"));
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  g.frames = 1 + (g.s_len - g.len) / g.step;
  g.bins = onesided ? g.len / 2 + 1 : g.len;
  return g;
}

}  // namespace oat::cpu
