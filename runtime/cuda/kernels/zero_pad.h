// Zero padding and cropping of a device tensor through the Pad kernel's constant mode
// (movement_impl.h): the explicit padding behind Conv and ConvTranspose windows that cuDNN, which
// pads both ends alike, cannot express (conv.cc, conv_transpose.cc).
#pragma once

#include <vector>

#include "runtime/cpu/kernels/pad_geometry.h"
#include "runtime/kernel.h"

namespace oat::cuda {

// y = Pad(x) in `mode` with `begin` elements before each dim (ONNX Pad's rule: pad_axis_map,
// runtime/cpu/kernels/pad_geometry.h), y's shape deciding where each dim ends; `fill` holds the
// constant's bytes (little-endian). One gather launch with per-axis maps uploaded; rank 0 copies.
void pad_into(KernelContext& ctx, const Tensor& x, Tensor& y, const std::vector<int64_t>& begin,
              cpu::PadMode mode, uint64_t fill);

// y[i] = x[i − begin] where that lies inside x, else 0, per dim (a negative begin crops that many
// leading elements); y's shape (allocated by the caller, same dtype and rank) decides where each
// dim ends, so a shorter y crops the end and a longer one pads it.
void zero_pad_into(KernelContext& ctx, const Tensor& x, Tensor& y,
                   const std::vector<int64_t>& begin);

}  // namespace oat::cuda
