// Resize's sampling rule, built on the host and shared by the CPU kernels (resize.cc) and the CUDA
// kernels (runtime/cuda/kernels/resize.cc), so both backends read the same taps and weights.
//
// Resize is separable: output coordinate o_d on axis d reads taps (index, weight) of axis d only,
// and Y[o] = Σ over the tap product Π_d w_d · X[idx_0, .., idx_{r-1}] (ONNX's reference
// interpolate_nd applies the 1-D rule axis by axis; the tensor-product sum is the same value).
//
// Per axis, with in = X.shape[d], out = Y.shape[d], s = the scale, W = s·in (a real number, as
// ONNX's reference: with scales 0.6 and in = 4, W = 2.4 while out = 2):
//   half_pixel:           x = (o + 0.5) / s − 0.5
//   pytorch_half_pixel:   x = W == 1 ? −0.5 : (o + 0.5) / s − 0.5
//   align_corners:        x = W == 1 ? 0 : o · (in − 1) / (W − 1)
//   asymmetric:           x = o / s
//   tf_half_pixel_for_nn: x = (o + 0.5) / s
//   tf_crop_and_resize:   with span = (roi_end − roi_start)·(in − 1) (roi of axis d),
//                         x = roi_start·(in − 1) + (W == 1 ? span / 2 : o · span / (W − 1));
//                         x < 0 or x > in − 1 ⇒ Y = extrapolation_value (any axis outside)
// Then base = floor(x) and ratio = x − base, except for an integral x: base = x − 1, ratio = 1
// (ONNX prefers the pixel left of x, so ratio ∈ (0, 1]):
//   nearest: one tap, index  round_prefer_floor: ratio ≤ 0.5 ? base : base + 1
//                            round_prefer_ceil:  ratio < 0.5 ? base : base + 1
//                            floor: ratio == 1 ? base + 1 : base;  ceil: base + 1
//                            simple (Resize-10, Upsample): s < 1 ? ceil(x) : floor(x)
//                            (ONNX Runtime's rule for the opsets without nearest_mode)
//   linear:  taps base, base + 1 with weights 1 − ratio, ratio
//   cubic:   taps base − 1 .. base + 2 with Keys' weights for t = ratio, A = cubic_coeff_a:
//              w0 = ((A(t+1) − 5A)(t+1) + 8A)(t+1) − 4A,   w1 = ((A+2)t − (A+3))t² + 1,
//              w2 = ((A+2)(1−t) − (A+3))(1−t)² + 1,        w3 = ((A(2−t) − 5A)(2−t) + 8A)(2−t) − 4A
//   exclude_outside (linear, cubic): weights of taps outside [0, in) become 0 and the rest are
//   divided by their sum. Tap indices are then clamped to [0, in) (ONNX pads X with its edge).
//   exclude_outside does not change nearest: its one tap is clamped inside like ONNX Runtime's.
// An axis whose every output reads exactly one tap of weight 1 (the N and C axes of a 2-D
// resize) keeps one tap: dropping taps of weight 0 changes no finite result.
//
// Output shape: sizes when given, else floor(in · scale) per axis (ONNX shape inference; the roi
// does not change it). With sizes, s = out / in.
//
// Legacy forms: Resize-10 (X, scales) and Upsample-7/9 (scales attribute / input 1) are
// asymmetric with the "simple" nearest rule above; Upsample's "bilinear" means linear.
// ResizeGrad(dY, shape(X), roi, scales) carries the forward's rule in explicit attributes
// (train/autodiff/grads/conv.cc): s = scales when given (or the `scales` attribute), else
// dY.shape / shape(X).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace oat::cpu {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoord {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};
enum class ResizeNearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

// The attributes of a Resize, Upsample or ResizeGrad node, with the legacy opsets' fixed rules
// filled in. Throws Error naming the node for an unknown mode.
struct ResizeAttrs {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  std::vector<float> scales_attr;  // Upsample-7 and ResizeGrad: the `scales` attribute
  // Input positions (-1: none): roi, scales, sizes.
  int roi_input = -1, scales_input = -1, sizes_input = -1;
};
ResizeAttrs parse_resize_attrs(const Node& n);
// The attribute values of `a` as ResizeGrad attributes (mode, coordinate_transformation_mode,
// nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value).
std::string resize_mode_name(ResizeMode m);
std::string resize_coord_name(ResizeCoord c);
std::string resize_nearest_name(ResizeNearest n);

// Shapes, scales and roi of one call.
struct ResizeGeometry {
  Shape x, y;
  std::vector<double> scales;  // one per axis
  std::vector<double> roi;     // 2·rank values (starts, then ends) for tf_crop_and_resize
};
// Forward: from X's shape and the node's roi / scales / sizes inputs (read on the host).
ResizeGeometry resize_geometry(const KernelContext& ctx, const ResizeAttrs& a, const Shape& x,
                               const Tensor* roi, const Tensor* scales, const Tensor* sizes);
// Gradient: X's and Y's shapes are known; scales from the input, the attribute or y / x.
ResizeGeometry resize_grad_geometry(const KernelContext& ctx, const ResizeAttrs& a, const Shape& x,
                                    const Shape& y, const Tensor* roi, const Tensor* scales);

// One axis's taps: output o reads idx[o·taps + k] (already clamped into [0, in)) with weight
// w[o·taps + k], k < taps; outside[o] (tf_crop_and_resize) makes the element extrapolation_value.
struct ResizeAxis {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;
};
std::vector<ResizeAxis> resize_axes(const ResizeAttrs& a, const ResizeGeometry& g);

// The adjoint of one axis: input i receives from the (output, weight) pairs
// pos[first[i] .. first[i+1]), in increasing output order; outputs outside and taps of weight 0
// are left out. dX[j] = Σ over the product of the axes' lists of Π w · dY[o].
struct ResizeAxisAdjoint {
  std::vector<int64_t> first, pos;
  std::vector<double> w;
};
ResizeAxisAdjoint resize_adjoint(const ResizeAxis& ax);

}  // namespace oat::cpu
