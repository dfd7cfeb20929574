// Sliding-window geometry shared by Conv, ConvTranspose, MaxPool and AveragePool.
//
// ONNX describes every windowed op with the same attributes: kernel_shape, strides, dilations,
// pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] and auto_pad. The kernels here run on
// 1-, 2- and 3-D spatial data through one code path: the spatial dims are right-aligned into three
// slots (a 2-D op has depth 1, kernel 1, stride 1, pad 0 in the first slot).
//
// Output size of a window op along one axis (dk = (k - 1) * dilation + 1, the dilated extent):
//   NOTSET:      out = floor((in + pad_begin + pad_end - dk) / stride) + 1   (ceil with ceil_mode;
//                then, as PyTorch does, the last window must start inside the input or the
//                begin padding, else out -= 1)
//   SAME_UPPER:  out = ceil(in / stride), total = max(0, (out - 1) * stride + dk - in),
//                pad_begin = total / 2, pad_end = total - pad_begin
//   SAME_LOWER:  same out and total, pad_end = total / 2, pad_begin = total - pad_end
//   VALID:       out = floor((in - dk) / stride) + 1, no padding
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace oat::cpu {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

struct WindowAttrs {
  std::vector<int64_t> kernel_shape;  // empty: taken from the weights (Conv, ConvTranspose)
  std::vector<int64_t> strides;       // empty: all 1
  std::vector<int64_t> dilations;     // empty: all 1
  std::vector<int64_t> pads;          // empty: all 0; else 2 * spatial rank values
  AutoPad auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;
};

// Parses the attributes above from `node` (ceil_mode only where the op has it).
WindowAttrs parse_window_attrs(const Node& node);

// One resolved window: three spatial slots, the first 3 - nd of them trivial.
struct Window3 {
  int nd = 0;  // the op's spatial rank (1..3)
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dil[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};      // begin padding
  int64_t pad_end[3] = {0, 0, 0};  // end padding

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  // The op's output spatial dims (the last nd slots).
  Shape out_shape() const;
  // A 1x1(x1) kernel with stride 1 and no padding: the input is its own im2col matrix.
  bool is_pointwise() const;
  // The 2-D 2x2, stride-2 pool window without padding or dilation, every window inside the
  // image (LeNet, VGG): each input element lies in at most one window.
  bool is_plain_2x2() const;
};

// Fills the attribute-derived slots (k, stride, dil, nd) and checks their lengths against the
// spatial rank of `x_shape` (N, C, spatial...). `kernel` is the spatial kernel size. Throws via
// ctx.fail naming the shapes, or Unsupported for more than 3 spatial dims.
Window3 window_from_attrs(const KernelContext& ctx, const WindowAttrs& a, const Shape& x_shape,
                          const std::vector<int64_t>& kernel);

// The forward geometry of Conv and the pools: output size and padding from the input size
// (see the table at the top).
Window3 forward_window(const KernelContext& ctx, const WindowAttrs& a, const Shape& x_shape,
                       const std::vector<int64_t>& kernel);

// The operand checks of Conv, ConvTranspose and their gradients, on the CPU and on CUDA; each
// fails naming the shapes.
// X is (N, C, spatial...) and W has X's rank.
void check_conv_ranks(const KernelContext& ctx, const Shape& x, const Shape& w);
// Conv's groups: C = W.shape[1] · group and M = W.shape[0] divisible by group (group ≥ 1).
void check_conv_groups(const KernelContext& ctx, const Shape& x, const Shape& w, int64_t group);
// ConvTranspose's groups: W.shape[0] = C and C divisible by group (group ≥ 1).
void check_conv_transpose_groups(const KernelContext& ctx, const Shape& x, const Shape& w,
                                 int64_t group);
// The spatial kernel W.shape[2:], which must equal attr kernel_shape where that is given.
std::vector<int64_t> conv_kernel_of(const KernelContext& ctx,
                                    const std::vector<int64_t>& kernel_shape, const Shape& w);

// The output indices o in [lo, hi) of one axis for which o * stride + offset lies in [0, in):
// the positions where a kernel tap with input offset `offset` reads real (unpadded) data.
inline void valid_range(int64_t offset, int64_t stride, int64_t in, int64_t out, int64_t* lo,
                        int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t h = in - offset <= 0 ? 0 : (in - 1 - offset) / stride + 1;
  *lo = std::min(l, out);
  *hi = std::max(*lo, std::min(h, out));
}

// The taps j in [lo, hi) of the window at output position o that fall inside the input along
// slot s, and `padded` = how many of the k taps fall inside [-pad_begin, in + pad_end). Shared by
// the pooling kernels and their gradients.
struct TapRange {
  int64_t lo, hi, padded;
};
std::vector<TapRange> tap_ranges(const Window3& w, int s);

}  // namespace oat::cpu
