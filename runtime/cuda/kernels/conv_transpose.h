// The cuDNN view of a ConvTranspose window (conv_transpose.cc); host code, checked without a
// device in tests/cuda/conv_pool_host_test.cc.
#pragma once

#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"

namespace oat::cuda {

// The cuDNN convolution whose backward-data pass is the ConvTranspose of window `w` (the CPU's
// conv_transpose_window: w.in holds Y's lengths, w.out X's): per spatial dim of cuDNN's rank
// max(nd, 2), outermost first, the begin padding (cuDNN pads both ends by it), the stride and the
// dilation. Throws Unsupported naming the node and the shapes where that convolution would have
// a different number of windows than X has positions, or a pad is negative.
struct CudnnConvWindow {
  std::vector<int> pad, stride, dil;
};
CudnnConvWindow transposed_conv_window(const KernelContext& ctx, const cpu::Window3& w,
                                       const std::vector<int64_t>& output_padding,
                                       const Shape& x_shape, const Shape& w_shape);

}  // namespace oat::cuda
