// Pad on CUDA: the CPU kernel's per-axis source maps (runtime/cpu/kernels/pad.cc) built on the
// host, uploaded once per call, and read by one gather kernel (movement_impl.cu):
//   Y.shape[d] = X.shape[d] + begin[d] + end[d];  along an axis, j = i − begin and n = X.shape[d]:
//   constant: j in [0, n) ? X[j] : value (negative pads crop);  reflect: mirrored about 0 and n−1
//   (numpy 'reflect');  edge: clamp(j, 0, n−1);  wrap: j mod n.
// Pads and axes come from attributes (opset < 11) or inputs 1 and 3 (read on the host); the
// constant value from attribute 'value' or input 2. Every dtype (only bytes move).
#include <algorithm>
#include <cstring>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/movement_impl.h"
#include "runtime/cuda/kernels/slice_view.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const Node& n)
      : from_attrs_(n.opset < 11),
        pads_attr_(n.attr_ints(n.opset < 2 ? "paddings" : "pads")),
        value_attr_(n.attr_float("value", 0.0f)) {
    const std::string m = n.attr_string("mode", "constant");
    if (m == "constant") mode_ = PadMode::Constant;
    else if (m == "reflect") mode_ = PadMode::Reflect;
    else if (m == "edge") mode_ = PadMode::Edge;
    else if (m == "wrap") mode_ = PadMode::Wrap;
    else throw Error(cat(n.describe(), ": unknown pad mode '", m, "'"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    if (r > kMaxRank) ctx.fail(cat("rank ", r, " is above the CUDA kernels' ", kMaxRank));
    std::vector<int64_t> pads = from_attrs_ ? pads_attr_ : host_input(ctx, 1).to_int_vector();
    std::vector<int64_t> axes;
    if (!from_attrs_ && ctx.has_input(3)) axes = host_input(ctx, 3).to_int_vector();
    if (axes.empty())
      for (int d = 0; d < r; ++d) axes.push_back(d);
    const size_t k = axes.size();
    if (pads.size() != 2 * k)
      ctx.fail(cat("pads ", shape_str(pads), " need 2 entries per padded axis (", k, ") of input ",
                   shape_str(x.shape())));
    std::vector<int64_t> begin(r, 0), end(r, 0);
    for (size_t i = 0; i < k; ++i) {
      const int a = norm_axis(ctx, axes[i], r);
      begin[a] = pads[i];
      end[a] = pads[i + k];
    }
    Shape out(r);
    for (int d = 0; d < r; ++d) {
      out[d] = x.shape()[d] + begin[d] + end[d];
      if (out[d] < 0)
        ctx.fail(cat("pads ", shape_str(pads), " crop input ", shape_str(x.shape()),
                     " below zero on axis ", d));
      if (mode_ != PadMode::Constant && x.shape()[d] == 0 && out[d] > 0)
        ctx.fail(cat("cannot pad an empty axis ", d, " of ", shape_str(x.shape()),
                     " except in constant mode"));
    }
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
    PadPlan plan;
    plan.rank = r;
    std::vector<int64_t> maps;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      plan.in_strides[d] = stride;
      stride *= x.shape()[d];
    }
    for (int d = 0; d < r; ++d) {
      plan.out_dims[d] = out[d];
      plan.map_offset[d] = static_cast<int64_t>(maps.size());
      for (int64_t i = 0; i < out[d]; ++i) maps.push_back(source(i - begin[d], x.shape()[d]));
    }
    CudaContext& cc = cuda_context(ctx);
    const Tensor dev_maps =
        cc.upload(Tensor::from_vector<int64_t>({static_cast<int64_t>(maps.size())}, maps));
    if (r == 0) {
      CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice,
                                 cc.stream()));
      return;
    }
    launch_pad(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), y.raw_data(), y.numel(),
               dev_maps.data<int64_t>(), plan, fill, cc.stream());
  }

 private:
  // Source index along one axis for output offset j = i − begin, −1 for the constant.
  int64_t source(int64_t j, int64_t n) const {
    if (j >= 0 && j < n) return j;
    switch (mode_) {
      case PadMode::Constant: return -1;
      case PadMode::Edge: return std::clamp<int64_t>(j, 0, n - 1);
      case PadMode::Wrap: return ((j % n) + n) % n;
      case PadMode::Reflect: {
        if (n == 1) return 0;
        j = j % (2 * (n - 1));  // the reflection repeats with period 2(n−1)
        if (j < 0) j += 2 * (n - 1);
        return j >= n ? 2 * (n - 1) - j : j;
      }
    }
    return -1;
  }

  bool from_attrs_;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
  PadMode mode_ = PadMode::Constant;
};

}  // namespace

void register_pad(KernelRegistry& r) {
  r.add(OpId::Pad, Device::CUDA, kAnyDType, kernel_factory<PadKernel>());
}

}  // namespace oat::cuda
