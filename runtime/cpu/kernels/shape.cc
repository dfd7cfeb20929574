// Shape kernels: Reshape, Flatten, Squeeze, Unsqueeze, Identity (zero-copy views of the input's
// storage), Shape, Size (shape metadata as I64 tensors) and Expand (a broadcasting copy).
// All of them are dtype-agnostic and register under kAnyDType.
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// Reshape: Y = X viewed with `shape`, where shape[i] == 0 copies X's dim i (unless allowzero,
// opset 14, makes it a literal 0) and one shape[i] == -1 takes numel(X) / prod(other dims).
// The target shape is an input from opset 5, the 'shape' attribute before.
class ReshapeKernel : public OpKernel {
 public:
  explicit ReshapeKernel(const Node& n)
      : allowzero_(n.attr_int("allowzero", 0) != 0),
        from_attr_(n.opset < 5),
        attr_shape_(n.attr_ints("shape")) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> want = from_attr_ ? attr_shape_ : ctx.input(1).to_int_vector();
    Shape out(want.size());
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < want.size(); ++i) {
      int64_t d = want[i];
      if (d == 0 && !allowzero_) {
        if (i >= x.shape().size())
          ctx.fail(cat("shape ", shape_str(want), " copies dim ", i, " (0) but the input ",
                       shape_str(x.shape()), " has rank ", x.rank()));
        d = x.shape()[i];
      } else if (d == -1) {
        if (infer >= 0) ctx.fail(cat("shape ", shape_str(want), " has more than one -1"));
        infer = static_cast<int>(i);
        continue;
      } else if (d < 0) {
        ctx.fail(cat("shape ", shape_str(want), " has a negative dimension ", d));
      }
      out[i] = d;
      known *= d;
    }
    if (infer >= 0) {
      if (known == 0 || x.numel() % known != 0)
        ctx.fail(
            cat("cannot infer the -1 in ", shape_str(want), " for input ", shape_str(x.shape())));
      out[infer] = x.numel() / known;
    }
    if (numel(out) != x.numel())
      ctx.fail(cat("cannot reshape ", shape_str(x.shape()), " (", x.numel(), " elements) to ",
                   shape_str(out), " (from ", shape_str(want), ")"));
    ctx.set_output(0, x.reshaped(out));
  }

 private:
  bool allowzero_;
  bool from_attr_;
  std::vector<int64_t> attr_shape_;
};

// Flatten: [d0 .. dn) -> [d0*..*d(axis-1), d(axis)*..*d(n-1)], axis in [-r, r] (default 1).
class FlattenKernel : public OpKernel {
 public:
  explicit FlattenKernel(const Node& n) : axis_(n.attr_int("axis", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    if (axis_ < -r || axis_ > r)
      ctx.fail(cat("axis ", axis_, " is out of range for input ", shape_str(x.shape())));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + r : axis_);
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
    int64_t inner = 1;
    for (int d = axis; d < r; ++d) inner *= x.shape()[d];
    ctx.set_output(0, x.reshaped({outer, inner}));
  }

 private:
  int64_t axis_;
};

// The axes of Squeeze/Unsqueeze: the 'axes' attribute before opset 13, the optional input 1 after.
std::vector<int64_t> squeeze_axes(const KernelContext& ctx, bool& given) {
  const Node& n = ctx.node();
  given = true;
  if (n.opset < 13) {
    given = n.has_attr("axes");
    return n.attr_ints("axes");
  }
  const Tensor* t = ctx.input_or_null(1);
  given = t != nullptr;
  return t ? t->to_int_vector() : std::vector<int64_t>{};
}

// Squeeze: removes the listed dims of size 1, or every dim of size 1 when axes are not given.
void squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  std::vector<int64_t> axes = squeeze_axes(ctx, given);
  std::vector<bool> drop(x.rank(), false);
  if (!given) {
    for (int d = 0; d < x.rank(); ++d) drop[d] = x.shape()[d] == 1;
  }
  for (int64_t a : axes) {
    int d = normalize_axis(ctx, a, x.rank(), "squeeze axis");
    if (x.shape()[d] != 1)
      ctx.fail(cat("cannot squeeze axis ", a, " of ", shape_str(x.shape()), ": its size is not 1"));
    drop[d] = true;
  }
  Shape out;
  for (int d = 0; d < x.rank(); ++d)
    if (!drop[d]) out.push_back(x.shape()[d]);
  ctx.set_output(0, x.reshaped(out));
}

// Unsqueeze: inserts dims of size 1 at `axes`, which index the output (rank r + len(axes)).
void unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  std::vector<int64_t> axes = squeeze_axes(ctx, given);
  if (!given) ctx.fail("Unsqueeze needs 'axes'");
  const int out_rank = x.rank() + static_cast<int>(axes.size());
  std::vector<bool> ones(out_rank, false);
  for (int64_t a : axes) {
    int d = normalize_axis(ctx, a, out_rank, "unsqueeze axis");
    if (ones[d]) ctx.fail(cat("unsqueeze axis ", a, " is repeated in ", shape_str(axes)));
    ones[d] = true;
  }
  Shape out(out_rank);
  for (int d = 0, k = 0; d < out_rank; ++d) out[d] = ones[d] ? 1 : x.shape()[k++];
  ctx.set_output(0, x.reshaped(out));
}

void identity(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }

// Shape: X's dims [start, end) as a 1-D I64 tensor; start/end (opset 15) are clamped to [0, r].
void shape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t r = x.rank();
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t start = clamp(ctx.node().attr_int("start", 0));
  const int64_t end = std::max(start, clamp(ctx.node().attr_int("end", r)));
  Tensor& y = ctx.allocate_output(0, DType::I64, {end - start});
  std::copy(x.shape().begin() + start, x.shape().begin() + end, y.data<int64_t>());
}

// Size: numel(X) as an I64 scalar.
void size(KernelContext& ctx) { ctx.set_output(0, Tensor::scalar<int64_t>(ctx.input(0).numel())); }

// Expand: Y = X broadcast (both ways, as numpy) with `shape`: Y.shape = broadcast(X.shape, shape).
void expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> want = ctx.input(1).to_int_vector();
  Shape out;
  try {
    out = broadcast_shapes({x.shape(), want});
  } catch (const Error& e) {
    ctx.fail(cat("cannot expand ", shape_str(x.shape()), " to ", shape_str(want), ": ", e.what()));
  }
  if (out == x.shape()) return ctx.set_output(0, x);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  const std::vector<int64_t> st = broadcast_strides(x.shape(), out);
  const int64_t inner = out.back(), inner_stride = st.back();
  dispatch_word(dtype_size(x.dtype()), [&](auto w) {
    using W = decltype(w);
    const W* src = static_cast<const W*>(x.raw_data());
    W* dst = static_cast<W*>(y.raw_data());
    for_each_row(out, st, 0, static_cast<int64_t>(y.nbytes()), [&](int64_t row, int64_t off) {
      W* d = dst + row * inner;
      if (inner_stride == 0) {
        std::fill(d, d + inner, src[off]);
      } else {
        std::memcpy(d, src + off, static_cast<size_t>(inner) * sizeof(W));
      }
    });
  });
}

}  // namespace

void register_shape(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::Reshape, cpu, kAnyDType, kernel_factory<ReshapeKernel>());
  r.add(OpId::Flatten, cpu, kAnyDType, kernel_factory<FlattenKernel>());
  r.add(OpId::Squeeze, cpu, kAnyDType, function_kernel(squeeze));
  r.add(OpId::Unsqueeze, cpu, kAnyDType, function_kernel(unsqueeze));
  r.add(OpId::Identity, cpu, kAnyDType, function_kernel(identity));
  r.add(OpId::Shape, cpu, kAnyDType, function_kernel(shape));
  r.add(OpId::Size, cpu, kAnyDType, function_kernel(size));
  r.add(OpId::Expand, cpu, kAnyDType, function_kernel(expand));
}

}  // namespace oat::cpu
