// RoiAlign's attributes and operand checks, shared by the CPU kernel (roi_align.cc) and the CUDA
// one (runtime/cuda/kernels/roi_align.cc), so both fail with the same messages, and the per-ROI
// geometry both use (formulas in roi_align.cc).
//   X [N, C, H, W] float; rois [R, 4] (x1, y1, x2, y2) in X's dtype; batch_indices [R] int64.
//   mode "avg" (default) | "max"; output_height, output_width (default 1); sampling_ratio
//   (default 0: adaptive, ceil(roi size / output size)); spatial_scale (default 1);
//   coordinate_transformation_mode (opset 16) "half_pixel" (default) | "output_half_pixel";
//   opset 10 has no attribute and behaves as output_half_pixel.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

struct RoiAlignArgs {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};

inline RoiAlignArgs roi_align_args(const Node& n) {
  RoiAlignArgs a;
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max")
    throw Error(cat(n.describe(), ": mode must be \"avg\" or \"max\", got \"", mode, "\""));
  a.max_mode = mode == "max";
  const std::string ct = n.attr_string(
      "coordinate_transformation_mode", n.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel")
    throw Error(cat(n.describe(), ": coordinate_transformation_mode must be \"half_pixel\" or ",
                    "\"output_half_pixel\", got \"", ct, "\""));
  a.half_pixel = ct == "half_pixel";
  a.out_h = n.attr_int("output_height", 1);
  a.out_w = n.attr_int("output_width", 1);
  a.sampling_ratio = n.attr_int("sampling_ratio", 0);
  a.spatial_scale = n.attr_float("spatial_scale", 1.0f);
  if (a.out_h < 1 || a.out_w < 1)
    throw Error(cat(n.describe(), ": output_height and output_width must be at least 1, got ",
                    a.out_h, " and ", a.out_w));
  if (a.sampling_ratio < 0)
    throw Error(cat(n.describe(), ": sampling_ratio must not be negative, got ", a.sampling_ratio));
  return a;
}

// Checks X, rois and batch_indices (host values: every batch index in [0, N)) and returns the
// output shape [R, C, output_height, output_width].
inline Shape roi_align_shape(const KernelContext& ctx, const RoiAlignArgs& a, const Tensor& x,
                             const Tensor& rois, const Tensor& batch_indices,
                             bool indices_on_host) {
  if (x.rank() != 4) ctx.fail(cat("X must be [N, C, H, W], got ", shape_str(x.shape())));
  if (rois.rank() != 2 || rois.dim(1) != 4)
    ctx.fail(cat("rois must be [num_rois, 4], got ", shape_str(rois.shape())));
  if (rois.dtype() != x.dtype())
    ctx.fail(cat("rois must have X's dtype ", dtype_name(x.dtype()), ", got ",
                 dtype_name(rois.dtype())));
  if (batch_indices.dtype() != DType::I64 && batch_indices.dtype() != DType::I32)
    ctx.fail(cat("batch_indices must be int64, got ", dtype_name(batch_indices.dtype())));
  if (batch_indices.rank() != 1 || batch_indices.dim(0) != rois.dim(0))
    ctx.fail(cat("batch_indices must be [num_rois] = [", rois.dim(0), "], got ",
                 shape_str(batch_indices.shape())));
  if (indices_on_host)
    for (int64_t r = 0; r < batch_indices.numel(); ++r) {
      const int64_t b = batch_indices.item_as_int(r);
      if (b < 0 || b >= x.dim(0))
        ctx.fail(cat("batch_indices[", r, "] = ", b, " is out of range for X ",
                     shape_str(x.shape())));
    }
  return {rois.dim(0), x.dim(1), a.out_h, a.out_w};
}

// One ROI's sampling grid (ONNX Runtime's RoiAlign): the ROI in X's pixels, the bin size and the
// number of samples per bin along each axis.
struct RoiGrid {
  float start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  float count;  // samples per bin, at least 1
};

inline RoiGrid roi_grid(const RoiAlignArgs& a, float x1, float y1, float x2, float y2) {
  const float offset = a.half_pixel ? 0.5f : 0.0f;
  RoiGrid g;
  g.start_w = x1 * a.spatial_scale - offset;
  g.start_h = y1 * a.spatial_scale - offset;
  float roi_w = x2 * a.spatial_scale - offset - g.start_w;
  float roi_h = y2 * a.spatial_scale - offset - g.start_h;
  if (!a.half_pixel) {  // output_half_pixel (opset 10): malformed ROIs become 1x1
    roi_w = std::max(roi_w, 1.0f);
    roi_h = std::max(roi_h, 1.0f);
  }
  g.bin_h = roi_h / static_cast<float>(a.out_h);
  g.bin_w = roi_w / static_cast<float>(a.out_w);
  g.grid_h = a.sampling_ratio > 0 ? a.sampling_ratio
                                  : static_cast<int64_t>(std::ceil(roi_h / static_cast<float>(a.out_h)));
  g.grid_w = a.sampling_ratio > 0 ? a.sampling_ratio
                                  : static_cast<int64_t>(std::ceil(roi_w / static_cast<float>(a.out_w)));
  g.grid_h = std::max<int64_t>(g.grid_h, 0);
  g.grid_w = std::max<int64_t>(g.grid_w, 0);
  g.count = static_cast<float>(std::max<int64_t>(g.grid_h * g.grid_w, 1));
  return g;
}

}  // namespace oat::cpu
