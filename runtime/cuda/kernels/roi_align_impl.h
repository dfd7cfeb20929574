// Launchers of RoiAlign (roi_align_impl.cu); formulas in runtime/cpu/kernels/roi_align.cc.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

struct RoiAlignLaunch {
  int64_t rois = 0, channels = 0, height = 0, width = 0, out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  float spatial_scale = 1.0f;
  bool half_pixel = true, max_mode = false;
};

// x [N, C, H, W], rois [R, 4] (x's element type), batch [R] int64 on the device (checked on the
// host), y [R, C, out_h, out_w]: one thread per output element, FP32 sums.
void launch_roi_align(ElemType t, const RoiAlignLaunch& p, const void* x, const void* rois,
                      const int64_t* batch, void* y, cudaStream_t s);

// RoiAlignGrad (avg mode): acc [N, C, H, W] float32, zeroed by the caller, += w·dY/count for every
// tap of every sample of dy [R, C, out_h, out_w] (FP32 atomics: the summation order differs from
// the CPU's sequential one in the last bits).
void launch_roi_align_grad(ElemType t, const RoiAlignLaunch& p, const void* dy, const void* rois,
                           const int64_t* batch, float* acc, cudaStream_t s);

}  // namespace oat::cuda
