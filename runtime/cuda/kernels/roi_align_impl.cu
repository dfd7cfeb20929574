// RoiAlign on CUDA: one thread per output element (r, c, ph, pw) walks its bin's samples and sums
// their bilinear taps in FP32, in the CPU kernel's order (runtime/cpu/kernels/roi_align.cc, where
// the formulas are; the per-ROI grid is roi_align_args.h's roi_grid, recomputed per thread).
// RoiAlignGrad: one thread per dY element adds each tap's share w·dY/count to an FP32 dX with
// atomics.
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/roi_align_impl.h"

namespace oat::cuda {

namespace {

// Calls f(k, pos, w) for the four taps k of every sample of bin (ph, pw) of ROI q (zero weights
// for a sample outside the plane: pos −1), and returns the bin's sample count (at least 1).
// start_sample() is called before each sample's taps.
template <class T, class Sample, class F>
__device__ float for_each_tap(const RoiAlignLaunch& p, const T* q, int64_t ph, int64_t pw,
                              Sample&& start_sample, F&& f) {
  const float offset = p.half_pixel ? 0.5f : 0.0f;
  const float start_w = to_float(q[0]) * p.spatial_scale - offset;
  const float start_h = to_float(q[1]) * p.spatial_scale - offset;
  float roi_w = to_float(q[2]) * p.spatial_scale - offset - start_w;
  float roi_h = to_float(q[3]) * p.spatial_scale - offset - start_h;
  if (!p.half_pixel) {
    roi_w = fmaxf(roi_w, 1.0f);
    roi_h = fmaxf(roi_h, 1.0f);
  }
  const float bin_h = roi_h / static_cast<float>(p.out_h);
  const float bin_w = roi_w / static_cast<float>(p.out_w);
  int64_t gh = p.sampling_ratio > 0
                   ? p.sampling_ratio
                   : static_cast<int64_t>(ceilf(roi_h / static_cast<float>(p.out_h)));
  int64_t gw = p.sampling_ratio > 0
                   ? p.sampling_ratio
                   : static_cast<int64_t>(ceilf(roi_w / static_cast<float>(p.out_w)));
  gh = gh < 0 ? 0 : gh;
  gw = gw < 0 ? 0 : gw;
  const int64_t H = p.height, W = p.width;
  for (int64_t iy = 0; iy < gh; ++iy) {
    const float yy0 = start_h + static_cast<float>(ph) * bin_h +
                      (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(gh);
    for (int64_t ix = 0; ix < gw; ++ix) {
      float yy = yy0;
      float xx = start_w + static_cast<float>(pw) * bin_w +
                 (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(gw);
      start_sample();
      if (yy < -1.0f || yy > static_cast<float>(H) || xx < -1.0f || xx > static_cast<float>(W)) {
        for (int k = 0; k < 4; ++k) f(k, int64_t{-1}, 0.0f);
        continue;
      }
      if (yy <= 0) yy = 0;
      if (xx <= 0) xx = 0;
      int64_t y_low = static_cast<int64_t>(yy), x_low = static_cast<int64_t>(xx), y_high, x_high;
      if (y_low >= H - 1) {
        y_high = y_low = H - 1;
        yy = static_cast<float>(y_low);
      } else {
        y_high = y_low + 1;
      }
      if (x_low >= W - 1) {
        x_high = x_low = W - 1;
        xx = static_cast<float>(x_low);
      } else {
        x_high = x_low + 1;
      }
      const float ly = yy - static_cast<float>(y_low), lx = xx - static_cast<float>(x_low);
      const float hy = 1.0f - ly, hx = 1.0f - lx;
      f(0, y_low * W + x_low, hy * hx);
      f(1, y_low * W + x_high, hy * lx);
      f(2, y_high * W + x_low, ly * hx);
      f(3, y_high * W + x_high, ly * lx);
    }
  }
  return static_cast<float>(gh * gw > 1 ? gh * gw : 1);
}

template <class T>
__global__ void roi_align_kernel(RoiAlignLaunch p, const T* x, const T* rois,
                                 const int64_t* batch, T* y) {
  const int64_t total = p.rois * p.channels * p.out_h * p.out_w;
  OAT_GRID_STRIDE_LOOP(i, total) {
    const int64_t pw = i % p.out_w, ph = (i / p.out_w) % p.out_h;
    const int64_t c = (i / (p.out_w * p.out_h)) % p.channels;
    const int64_t r = i / (p.out_w * p.out_h * p.channels);
    const T* plane = x + (batch[r] * p.channels + c) * p.height * p.width;
    float acc = 0.0f, m = 0.0f;
    bool first = true;
    const float count = for_each_tap(
        p, rois + r * 4, ph, pw,
        [&] { m = -INFINITY; },
        [&](int k, int64_t pos, float w) {
          const float v = pos < 0 ? 0.0f : __fmul_rn(w, to_float(plane[pos]));
          if (!p.max_mode) {
            acc = __fadd_rn(acc, v);
          } else {
            m = fmaxf(m, v);
            if (k == 3) {
              acc = first ? m : fmaxf(acc, m);
              first = false;
            }
          }
        });
    y[i] = from_float<T>(p.max_mode ? acc : acc / count);
  }
}

template <class T>
__global__ void roi_align_grad_kernel(RoiAlignLaunch p, const T* dy, const T* rois,
                                      const int64_t* batch, float* acc) {
  const int64_t total = p.rois * p.channels * p.out_h * p.out_w;
  OAT_GRID_STRIDE_LOOP(i, total) {
    const int64_t pw = i % p.out_w, ph = (i / p.out_w) % p.out_h;
    const int64_t c = (i / (p.out_w * p.out_h)) % p.channels;
    const int64_t r = i / (p.out_w * p.out_h * p.channels);
    float* plane = acc + (batch[r] * p.channels + c) * p.height * p.width;
    // count first (a dry pass), then the taps' shares.
    const float count = for_each_tap(p, rois + r * 4, ph, pw, [] {}, [](int, int64_t, float) {});
    const float share = to_float(dy[i]) / count;
    for_each_tap(p, rois + r * 4, ph, pw, [] {}, [&](int, int64_t pos, float w) {
      if (pos >= 0 && w != 0.0f) atomicAdd(plane + pos, w * share);
    });
  }
}

}  // namespace

void launch_roi_align(ElemType t, const RoiAlignLaunch& p, const void* x, const void* rois,
                      const int64_t* batch, void* y, cudaStream_t s) {
  const int64_t total = p.rois * p.channels * p.out_h * p.out_w;
  if (total == 0) return;
  dispatch_float(t, "RoiAlign", [&](auto tag) {
    using T = decltype(tag);
    roi_align_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(
        p, static_cast<const T*>(x), static_cast<const T*>(rois), batch, static_cast<T*>(y));
  });
  CUDA_CHECK_LAUNCH();
}

void launch_roi_align_grad(ElemType t, const RoiAlignLaunch& p, const void* dy, const void* rois,
                           const int64_t* batch, float* acc, cudaStream_t s) {
  const int64_t total = p.rois * p.channels * p.out_h * p.out_w;
  if (total == 0) return;
  dispatch_float(t, "RoiAlignGrad", [&](auto tag) {
    using T = decltype(tag);
    roi_align_grad_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(
        p, static_cast<const T*>(dy), static_cast<const T*>(rois), batch, acc);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
