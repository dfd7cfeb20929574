// Slice: Y = X[start_0 : end_0 : step_0, ...] along the listed axes (others whole).
//
// Opset 1-9 take starts/ends/axes as attributes (step 1); opset 10+ take inputs starts, ends,
// optional axes and steps. Per axis of size n, as numpy and ONNX define it:
//   start += n if start < 0;  end += n if end < 0
//   step > 0: start, end clamped to [0, n];      count = max(0, ceil((end - start) / step))
//   step < 0: start clamped to [0, n-1], end to [-1, n-1]; count = max(0, ceil((start - end) /
//   -step))
// so INT64_MAX / INT64_MIN ends mean "to the end". The copy walks output rows with a base offset
// and per-dim strides step*stride; a step-1 last axis is one memcpy per row.
// Registered from register_movement().
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/slice_geometry.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class SliceKernel : public OpKernel {
 public:
  explicit SliceKernel(const Node& n)
      : from_attrs_(n.opset < 10),
        starts_(n.attr_ints("starts")),
        ends_(n.attr_ints("ends")),
        axes_(n.attr_ints("axes")) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!from_attrs_) {
      starts = ctx.input(1).to_int_vector();
      ends = ctx.input(2).to_int_vector();
      axes = optional_ints(ctx, 3);
      steps = optional_ints(ctx, 4);
    }
    const SliceGeometry g = slice_geometry(ctx, x.shape(), starts, ends, axes, steps, true);
    const Shape& out = g.out;
    const std::vector<int64_t>& st = g.strides;
    const int64_t base = g.base;
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    if (r == 0) {
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
      return;
    }
    const int64_t inner = out[r - 1], inner_step = st[r - 1];
    dispatch_word(dtype_size(x.dtype()), [&](auto w) {
      using W = decltype(w);
      const W* src = static_cast<const W*>(x.raw_data());
      W* dst = static_cast<W*>(y.raw_data());
      for_each_row(out, st, base, static_cast<int64_t>(y.nbytes()), [&](int64_t row, int64_t off) {
        W* d = dst + row * inner;
        if (inner_step == 1) {
          std::memcpy(d, src + off, static_cast<size_t>(inner) * sizeof(W));
        } else {
          for (int64_t j = 0; j < inner; ++j) d[j] = src[off + j * inner_step];
        }
      });
    });
  }

 private:
  bool from_attrs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

}  // namespace

void register_slice(KernelRegistry& r) {
  r.add(OpId::Slice, Device::CPU, kAnyDType, kernel_factory<SliceKernel>());
}

}  // namespace oat::cpu
