// Pad and PadGrad on CUDA. The per-axis source maps come from the CPU's rule
// (runtime/cpu/kernels/pad_geometry.h: mode parsing, pad_axis_map, invert_pad_map), are built on
// the host and uploaded once per call:
//   Pad: Y.shape[d] = X.shape[d] + begin[d] + end[d];  along an axis, j = i − begin and
//     n = X.shape[d]: constant: j in [0, n) ? X[j] : value (negative pads crop);  reflect:
//     mirrored about 0 and n−1 (numpy 'reflect');  edge: clamp(j, 0, n−1);  wrap: j mod n.
//     One gather kernel (movement_impl.cu); every dtype (only bytes move).
//     Pads and axes come from attributes (opset < 11) or inputs 1 and 3 (read on the host); the
//     constant value from attribute 'value' or input 2.
//   PadGrad(dY, shape(X), [pads], [axes]) -> dX  (attrs mode, pads when the forward had them):
//     dX[j] = Σ_{i : src(i) = j} dY[i], the sum over the Cartesian product of the inverted axis
//     maps, in FP32, in the CPU kernel's order (runtime/cpu/kernels/grad_movement.cc); one thread
//     per dX element, no atomics. F32, F16, BF16.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernels/pad_geometry.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/movement_impl.h"
#include "runtime/cuda/kernels/slice_view.h"
#include "runtime/cuda/kernels/zero_pad.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

using cpu::PadMode;

// cpu::pad_amounts (pad_geometry.h) with the CUDA kernels' rank limit.
cpu::PadAmounts pad_amounts(const KernelContext& ctx, const Shape& xs,
                            const std::vector<int64_t>& pads, const std::vector<int64_t>& axes) {
  const int r = static_cast<int>(xs.size());
  if (r > kMaxRank) ctx.fail(cat("rank ", r, " is above the CUDA kernels' ", kMaxRank));
  return cpu::pad_amounts(ctx, xs, pads, axes);
}

class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const Node& n)
      : from_attrs_(n.opset < 11),
        pads_attr_(n.attr_ints(n.opset < 2 ? "paddings" : "pads")),
        value_attr_(n.attr_float("value", 0.0f)),
        mode_(cpu::parse_pad_mode(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> pads =
        from_attrs_ ? pads_attr_ : host_input(ctx, 1).to_int_vector();
    std::vector<int64_t> axes;
    if (!from_attrs_ && ctx.has_input(3)) axes = host_input(ctx, 3).to_int_vector();
    const cpu::PadAmounts pa = pad_amounts(ctx, x.shape(), pads, axes);
    const std::vector<int64_t>& begin = pa.begin;
    const Shape out = cpu::padded_shape(ctx, x.shape(), pads, pa, mode_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    // The fill value's bytes.
    uint64_t fill = 0;
    if (mode_ == PadMode::Constant) {
      Tensor value = cast_tensor(Tensor::scalar<float>(value_attr_), x.dtype());
      if (!from_attrs_ && ctx.has_input(2)) {
        const Tensor v = host_input(ctx, 2);
        if (v.numel() > 0) {
          if (v.dtype() != x.dtype())
            ctx.fail(cat("constant_value is ", dtype_name(v.dtype()), ", data is ",
                         dtype_name(x.dtype())));
          value = v;
        } else {
          value = cast_tensor(Tensor::scalar<float>(0.f), x.dtype());
        }
      } else if (!from_attrs_) {
        value = cast_tensor(Tensor::scalar<float>(0.f), x.dtype());
      }
      std::memcpy(&fill, value.raw_data(), dtype_size(x.dtype()));
    }
    pad_into(ctx, x, y, begin, mode_, fill);
  }

 private:
  bool from_attrs_;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
  PadMode mode_;
};

// PadGrad(dY, shape(X), [pads], [axes]) -> dX; pads/axes as the CPU's PadGradKernel: from the
// 'pads' attribute when the forward had one, else inputs 2 and 3 (read on the host).
class PadGradKernel : public OpKernel {
 public:
  explicit PadGradKernel(const Node& n)
      : pads_attr_(n.attr_ints("pads")),
        from_attrs_(n.has_attr("pads")),
        mode_(cpu::parse_pad_mode(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Shape xs = shape_input(ctx, 1);
    const int r = static_cast<int>(xs.size());
    const std::vector<int64_t> pads =
        from_attrs_ ? pads_attr_ : host_input(ctx, 2).to_int_vector();
    std::vector<int64_t> axes;
    if (!from_attrs_ && ctx.has_input(3)) axes = host_input(ctx, 3).to_int_vector();
    const cpu::PadAmounts pa = pad_amounts(ctx, xs, pads, axes);
    Shape out = xs;
    for (int d = 0; d < r; ++d) out[d] = xs[d] + pa.begin[d] + pa.end[d];
    if (dy.shape() != out)
      ctx.fail(cat("gradient shape ", shape_str(dy.shape()), " does not match the padded input ",
                   shape_str(out)));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    CudaContext& cc = cuda_context(ctx);
    if (dx.numel() == 0) return;
    if (dy.numel() == 0) {  // every source position was cropped away
      CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), cc.stream()));
      return;
    }
    if (r == 0) {
      CUDA_CHECK(cudaMemcpyAsync(dx.raw_data(), dy.raw_data(), dy.nbytes(),
                                 cudaMemcpyDeviceToDevice, cc.stream()));
      return;
    }
    // One int64 buffer: per axis the CSR `first` (xs[d] + 1 entries), then per axis `pos`.
    PadGradPlan plan;
    plan.rank = r;
    std::vector<int64_t> buf;
    std::vector<cpu::InverseMap> inv(r);
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      plan.y_strides[d] = stride;
      stride *= out[d];
    }
    for (int d = 0; d < r; ++d) {
      inv[d] = cpu::invert_pad_map(cpu::pad_axis_map(mode_, out[d], xs[d], pa.begin[d]), xs[d]);
      plan.x_dims[d] = xs[d];
      plan.first_offset[d] = static_cast<int64_t>(buf.size());
      buf.insert(buf.end(), inv[d].first.begin(), inv[d].first.end());
    }
    for (int d = 0; d < r; ++d) {
      plan.pos_offset[d] = static_cast<int64_t>(buf.size());
      buf.insert(buf.end(), inv[d].pos.begin(), inv[d].pos.end());
    }
    const Tensor dev =
        cc.upload(Tensor::from_vector<int64_t>({static_cast<int64_t>(buf.size())}, buf));
    launch_pad_grad(elem_type(dy.dtype()), dy.raw_data(), dx.raw_data(), dx.numel(),
                    dev.data<int64_t>(), plan, cc.stream());
  }

 private:
  std::vector<int64_t> pads_attr_;
  bool from_attrs_;
  PadMode mode_;
};

}  // namespace

void register_pad(KernelRegistry& r) {
  r.add(OpId::Pad, Device::CUDA, kAnyDType, kernel_factory<PadKernel>());
  add_floats(r, OpId::PadGrad, kernel_factory<PadGradKernel>());
}

}  // namespace oat::cuda
