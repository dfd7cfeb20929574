// RoiAlign (opsets 10, 16; attributes and checks in roi_align_args.h), ONNX Runtime's algorithm
// (Mask R-CNN's ROIAlign), which ONNX's reference and test data follow:
//
//   per ROI r = (x1, y1, x2, y2) of image b = batch_indices[r], offset = 0.5 for half_pixel,
//   0 for output_half_pixel:
//     start = (x1, y1)·spatial_scale − offset,  size = (x2, y2)·spatial_scale − offset − start
//     (output_half_pixel: size = max(size, 1))
//     bin = size / (output_height, output_width)
//     grid = sampling_ratio > 0 ? sampling_ratio : ceil(size / (output_height, output_width))
//   Y[r, c, ph, pw] over the grid_h·grid_w samples of bin (ph, pw):
//     y = start_h + ph·bin_h + (iy + 0.5)·bin_h / grid_h,  x likewise with pw, ix
//     bilinear taps of X[b, c] at (y, x): a sample outside [−1, H] × [−1, W] is 0; otherwise
//     y, x < 0 become 0, y_low = floor(y), y_high = y_low + 1, and at the last row
//     y_low = y_high = H − 1, y = y_low (x likewise); ly = y − y_low, hy = 1 − ly (lx, hx)
//     w = (hy·hx, hy·lx, ly·hx, ly·lx) on (y_low, x_low), (y_low, x_high), (y_high, x_low),
//     (y_high, x_high)
//     avg: Y = Σ_samples Σ_taps w·X / max(grid_h·grid_w, 1)
//     max: Y = max over samples of (max over taps of w·X) (ONNX Runtime's rule: the largest
//          weighted tap, not the interpolated value)
//
// F16/BF16 run on FP32 copies (in_fp32); F64 sums in double (the sample positions and weights
// are FP32 in every dtype). The CUDA kernel (runtime/cuda/kernels/roi_align.cc) computes the
// same sums in the same order.
//
// Gradient (avg mode; train/autodiff/grads/conv.cc): dX = RoiAlignGrad(dY, shape(X), rois,
// batch_indices), the adjoint of the taps (below); rois and batch_indices get none (as
// torchvision's roi_align). Max mode has no gradient: training through it is refused.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/roi_align_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

struct Tap {
  int64_t pos[4];
  float w[4];
};

// The four taps of a sample at (y, x) in an H x W plane (weights 0 outside).
Tap bilinear_tap(float y, float x, int64_t h, int64_t w) {
  Tap t{{0, 0, 0, 0}, {0, 0, 0, 0}};
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return t;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= h - 1) {
    y_high = y_low = h - 1;
    y = static_cast<float>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= w - 1) {
    x_high = x_low = w - 1;
    x = static_cast<float>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const float ly = y - static_cast<float>(y_low), lx = x - static_cast<float>(x_low);
  const float hy = 1.0f - ly, hx = 1.0f - lx;
  t.pos[0] = y_low * w + x_low;
  t.pos[1] = y_low * w + x_high;
  t.pos[2] = y_high * w + x_low;
  t.pos[3] = y_high * w + x_high;
  t.w[0] = hy * hx;
  t.w[1] = hy * lx;
  t.w[2] = ly * hx;
  t.w[3] = ly * lx;
  return t;
}

// The taps of every sample of every bin of one ROI, bin-major (bins in row-major order, samples
// iy-major within a bin): grid.grid_h · grid.grid_w taps per bin.
RoiGrid roi_taps(const RoiAlignArgs& a, const float q[4], int64_t h, int64_t w,
                 std::vector<Tap>& taps) {
  const RoiGrid g = roi_grid(a, q[0], q[1], q[2], q[3]);
  taps.clear();
  for (int64_t ph = 0; ph < a.out_h; ++ph)
    for (int64_t pw = 0; pw < a.out_w; ++pw)
      for (int64_t iy = 0; iy < g.grid_h; ++iy) {
        const float yy = g.start_h + static_cast<float>(ph) * g.bin_h +
                         (static_cast<float>(iy) + 0.5f) * g.bin_h / static_cast<float>(g.grid_h);
        for (int64_t ix = 0; ix < g.grid_w; ++ix) {
          const float xx = g.start_w + static_cast<float>(pw) * g.bin_w +
                           (static_cast<float>(ix) + 0.5f) * g.bin_w / static_cast<float>(g.grid_w);
          taps.push_back(bilinear_tap(yy, xx, h, w));
        }
      }
  return g;
}

template <class T>
class RoiAlignKernel : public OpKernel {
 public:
  explicit RoiAlignKernel(const Node& n) : a_(roi_align_args(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor& bi = ctx.input(2);
    const Shape ys = roi_align_shape(ctx, a_, x, rois, bi, true);
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
    const int64_t nr = ys[0], nc = ys[1], oh = ys[2], ow = ys[3], h = x.dim(2), w = x.dim(3);
    if (y.numel() == 0) return;
    const T* xp = x.data<T>();
    const T* rp = rois.data<T>();
    T* yp = y.data<T>();
    const RoiAlignArgs a = a_;
    std::vector<int64_t> batch(static_cast<size_t>(nr));
    for (int64_t r = 0; r < nr; ++r) batch[r] = bi.item_as_int(r);
    parallel_chunks(nr, y.numel() * 16 >= kElementwiseParallelMin, [&](int64_t begin, int64_t end) {
      std::vector<Tap> taps;
      for (int64_t r = begin; r < end; ++r) {
        const float q[4] = {static_cast<float>(rp[r * 4]), static_cast<float>(rp[r * 4 + 1]),
                            static_cast<float>(rp[r * 4 + 2]), static_cast<float>(rp[r * 4 + 3])};
        const RoiGrid g = roi_taps(a, q, h, w, taps);  // shared by the channels
        const int64_t per_bin = g.grid_h * g.grid_w;
        for (int64_t c = 0; c < nc; ++c) {
          const T* plane = xp + (batch[r] * nc + c) * h * w;
          T* out = yp + (r * nc + c) * oh * ow;
          for (int64_t bin = 0; bin < oh * ow; ++bin) {
            const Tap* t = taps.data() + bin * per_bin;
            T acc = 0;
            if (!a.max_mode) {
              for (int64_t s = 0; s < per_bin; ++s)
                for (int k = 0; k < 4; ++k) acc += static_cast<T>(t[s].w[k]) * plane[t[s].pos[k]];
              out[bin] = acc / static_cast<T>(g.count);
            } else {
              for (int64_t s = 0; s < per_bin; ++s) {
                T v = static_cast<T>(t[s].w[0]) * plane[t[s].pos[0]];
                for (int k = 1; k < 4; ++k)
                  v = std::max(v, static_cast<T>(t[s].w[k]) * plane[t[s].pos[k]]);
                acc = s == 0 ? v : std::max(acc, v);
              }
              out[bin] = acc;
            }
          }
        }
      }
    });
  }

 private:
  RoiAlignArgs a_;
};

// RoiAlignGrad(dY [R, C, oh, ow], shape(X), rois, batch_indices), avg mode only: the adjoint of
// the forward's taps,
//   dX = 0;  dX[b_r, c, pos_k] += w_k · dY[r, c, ph, pw] / count  for every ROI r, bin, sample, tap
// Each channel's planes are summed by one thread, ROIs in order (deterministic).
template <class T>
class RoiAlignGradKernel : public OpKernel {
 public:
  explicit RoiAlignGradKernel(const Node& n) : a_(roi_align_args(n)) {
    if (a_.max_mode)
      throw Error(cat(n.describe(), ": RoiAlignGrad supports mode \"avg\" only"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& shape = ctx.input(1);
    const Tensor& rois = ctx.input(2);
    const Tensor& bi = ctx.input(3);
    if (shape.dtype() != DType::I64 || shape.numel() != 4)
      ctx.fail(cat("shape(X) must be int64 [4], got ", dtype_name(shape.dtype()), " ",
                   shape_str(shape.shape())));
    const Shape xs = shape.to_int_vector();
    for (int64_t d : xs)
      if (d < 0) ctx.fail(cat("shape(X) must not be negative, got ", shape_str(xs)));
    // X's checks on an empty stand-in of X's batch and channels.
    const Shape ys = roi_align_shape(ctx, a_, Tensor(dy.dtype(), {xs[0], xs[1], 0, 0}), rois, bi,
                                     true);
    if (dy.shape() != Shape{ys[0], ys[1], ys[2], ys[3]})
      ctx.fail(cat("dY must be ", shape_str(ys), ", got ", shape_str(dy.shape())));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    T* dp = dx.data<T>();
    std::fill(dp, dp + dx.numel(), T(0));
    const int64_t nr = ys[0], nc = ys[1], bins = ys[2] * ys[3], h = xs[2], w = xs[3];
    if (dy.numel() == 0 || dx.numel() == 0) return;
    const T* gp = dy.data<T>();
    const T* rp = rois.data<T>();
    std::vector<int64_t> batch(static_cast<size_t>(nr));
    for (int64_t r = 0; r < nr; ++r) batch[r] = bi.item_as_int(r);
    // The taps of every ROI, computed once.
    std::vector<std::vector<Tap>> taps(static_cast<size_t>(nr));
    std::vector<RoiGrid> grids(static_cast<size_t>(nr));
    for (int64_t r = 0; r < nr; ++r) {
      const float q[4] = {static_cast<float>(rp[r * 4]), static_cast<float>(rp[r * 4 + 1]),
                          static_cast<float>(rp[r * 4 + 2]), static_cast<float>(rp[r * 4 + 3])};
      grids[r] = roi_taps(a_, q, h, w, taps[r]);
    }
    parallel_chunks(nc, dy.numel() * 16 >= kElementwiseParallelMin, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        for (int64_t r = 0; r < nr; ++r) {
          T* plane = dp + (batch[r] * nc + c) * h * w;
          const T* g = gp + (r * nc + c) * bins;
          const int64_t per_bin = grids[r].grid_h * grids[r].grid_w;
          for (int64_t bin = 0; bin < bins; ++bin) {
            const T share = g[bin] / static_cast<T>(grids[r].count);
            const Tap* t = taps[r].data() + bin * per_bin;
            for (int64_t s = 0; s < per_bin; ++s)
              for (int k = 0; k < 4; ++k) plane[t[s].pos[k]] += static_cast<T>(t[s].w[k]) * share;
          }
        }
    });
  }

 private:
  RoiAlignArgs a_;
};

}  // namespace

void register_roi_align(KernelRegistry& r) {
  r.add(OpId::RoiAlignGrad, Device::CPU, DType::F32, kernel_factory<RoiAlignGradKernel<float>>());
  r.add(OpId::RoiAlignGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<RoiAlignGradKernel<float>>()));
  r.add(OpId::RoiAlignGrad, Device::CPU, DType::F64, kernel_factory<RoiAlignGradKernel<double>>());
  r.add(OpId::RoiAlign, Device::CPU, DType::F32, kernel_factory<RoiAlignKernel<float>>());
  r.add(OpId::RoiAlign, Device::CPU, kLowFloats, in_fp32(kernel_factory<RoiAlignKernel<float>>()));
  r.add(OpId::RoiAlign, Device::CPU, DType::F64, kernel_factory<RoiAlignKernel<double>>());
}

}  // namespace oat::cpu
