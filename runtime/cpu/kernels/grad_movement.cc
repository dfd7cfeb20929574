// Gradient kernels of the data-movement ops (internal domain). Each is the adjoint of a forward
// kernel in slice.cc, gather.cc, pad.cc, movement.cc or generator.cc: where the forward reads
// X[src(i)] into Y[i], the gradient scatters dY[i] back, summing where several i share one src.
//
//   SliceGrad(dY, shape(X), starts, ends, [axes], [steps]) -> dX   (opset < 10: attributes)
//     dX = 0;  dX[start + k·step] = dY[k]  per sliced axis (the positions are distinct)
//   GatherGrad(dY, shape(X), indices) -> dX                        (attr axis)
//     dX = 0;  dX[o, idx[j], i] += dY[o, j, i]        (X viewed as [outer, n, inner])
//   GatherElementsGrad(dY, shape(X), indices) -> dX                (attr axis)
//     dX = 0;  dX[.., idx[p], ..] += dY[p]            (idx[p] replaces p's coordinate on axis)
//   PadGrad(dY, shape(X), [pads], [axes]) -> dX     (attrs mode, pads when the forward had them)
//     dX[j] = Σ_{i : src(i) = j} dY[i]   (constant: a crop of dY; reflect/edge/wrap also add
//     the mirrored / repeated border positions back onto their sources)
//   ConcatGrad(dY, shape(X_0), .., shape(X_n-1)) -> dX_0 .. dX_n-1  (attr axis)
//     dX_k = dY[.., offset_k : offset_k + X_k.shape[axis], ..]; omitted outputs are skipped
//   TileGrad(dY, shape(X)) -> dX
//     dX[j] = Σ_{tiles t} dY[t ⊙ X.shape + j]
//   DropoutGrad(dY, mask, [ratio], [training_mode]) -> dX    (attrs ratio, training)
//     training and ratio > 0:  dX = dY ⊙ mask / (1 − ratio);  otherwise dX = dY
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/pad_geometry.h"
#include "runtime/cpu/kernels/slice_geometry.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// The shape input (an I64 vector, from a Shape node); fails on negative dims.
Shape shape_input(const KernelContext& ctx, int i) {
  Shape s = ctx.input(i).to_int_vector();
  for (int64_t d : s)
    if (d < 0) ctx.fail(cat("input shape ", shape_str(s), " has a negative dimension"));
  return s;
}

// Output 0 of `shape` filled with zero bits (0.0 for every float dtype).
Tensor& zero_output(KernelContext& ctx, DType dtype, const Shape& shape) {
  Tensor& t = ctx.allocate_output(0, dtype, shape);
  if (t.nbytes() > 0) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

void expect_shape(const KernelContext& ctx, const Tensor& dy, const Shape& want, const char* what) {
  if (dy.shape() != want)
    ctx.fail(cat("gradient shape ", shape_str(dy.shape()), " does not match ", what, " ",
                 shape_str(want)));
}

// ---- SliceGrad --------------------------------------------------------------------------------

class SliceGradKernel : public OpKernel {
 public:
  explicit SliceGradKernel(const Node& n)
      : starts_(n.attr_ints("starts")), ends_(n.attr_ints("ends")), axes_(n.attr_ints("axes")) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Shape xs = shape_input(ctx, 1);
    const int r = static_cast<int>(xs.size());
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (ctx.has_input(2)) {  // opset 10+: starts, ends, [axes], [steps] are inputs
      starts = ctx.input(2).to_int_vector();
      ends = ctx.input(3).to_int_vector();
      axes = optional_ints(ctx, 4);
      steps = optional_ints(ctx, 5);
    }
    // The forward's geometry: dY's shape and where its elements came from in X.
    const SliceGeometry g = slice_geometry(ctx, xs, starts, ends, axes, steps, false);
    const Shape& out = g.out;
    const std::vector<int64_t>& st = g.strides;
    const int64_t base = g.base;
    expect_shape(ctx, dy, out, "the slice of input");
    Tensor& dx = zero_output(ctx, dy.dtype(), xs);
    if (dy.numel() == 0) return;
    if (r == 0) {
      std::memcpy(dx.raw_data(), dy.raw_data(), dy.nbytes());
      return;
    }
    const int64_t inner = out[r - 1], inner_step = st[r - 1];
    dispatch_word(dtype_size(dy.dtype()), [&](auto w) {
      using W = decltype(w);
      const W* src = static_cast<const W*>(dy.raw_data());
      W* dst = static_cast<W*>(dx.raw_data());
      // Distinct dY rows land on distinct dX positions, so rows may run in parallel.
      for_each_row(out, st, base, static_cast<int64_t>(dy.nbytes()), [&](int64_t row, int64_t off) {
        const W* s = src + row * inner;
        if (inner_step == 1) {
          std::memcpy(dst + off, s, static_cast<size_t>(inner) * sizeof(W));
        } else {
          for (int64_t j = 0; j < inner; ++j) dst[off + j * inner_step] = s[j];
        }
      });
    });
  }

 private:
  std::vector<int64_t> starts_, ends_, axes_;
};

// ---- GatherGrad, GatherElementsGrad -----------------------------------------------------------

template <class T>
void gather_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const Tensor& ind = ctx.input(2);
  const int r = static_cast<int>(xs.size());
  if (r == 0) ctx.fail("cannot gather from a scalar");
  const int axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), r);
  const int64_t n = xs[axis];
  const std::vector<int64_t> idx = wrapped_indices(ctx, ind, n, xs, axis);
  Shape ys(xs.begin(), xs.begin() + axis);
  ys.insert(ys.end(), ind.shape().begin(), ind.shape().end());
  ys.insert(ys.end(), xs.begin() + axis + 1, xs.end());
  expect_shape(ctx, dy, ys, "the gather result");
  Tensor& dx = zero_output(ctx, dy.dtype(), xs);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= xs[d];
  for (int d = axis + 1; d < r; ++d) inner *= xs[d];
  const int64_t m = static_cast<int64_t>(idx.size());
  const T* g = dy.data<T>();
  T* out = dx.data<T>();
  // Repeated indices add into one row, so threads split (outer, column block) pairs: each owns
  // a disjoint slab of dX and walks every index (an embedding's gradient has outer = 1).
  const int64_t width = 512, blocks = (inner + width - 1) / width;
  parallel_chunks(outer * blocks, dy.numel() >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t u = begin; u < end; ++u) {
                      const int64_t o = u / blocks, c0 = (u % blocks) * width;
                      const int64_t w = std::min(width, inner - c0);
                      for (int64_t j = 0; j < m; ++j) {
                        const T* s = g + (o * m + j) * inner + c0;
                        T* d = out + (o * n + idx[j]) * inner + c0;
                        for (int64_t c = 0; c < w; ++c) d[c] += s[c];
                      }
                    }
                  });
}

template <class T>
void gather_elements_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const Tensor& ind = ctx.input(2);
  const int r = static_cast<int>(xs.size());
  const int axis = elements_axis(ctx, xs, ind.shape(), ctx.node().attr_int("axis", 0));
  expect_shape(ctx, dy, ind.shape(), "the indices");
  const std::vector<int64_t> idx = wrapped_indices(ctx, ind, xs[axis], xs, axis);
  Tensor& dx = zero_output(ctx, dy.dtype(), xs);
  if (dy.numel() == 0) return;
  const Shape& is = ind.shape();
  const std::vector<int64_t> xst = contiguous_strides(xs);
  const int64_t inner = is[r - 1], rows = dy.numel() / inner;
  const T* g = dy.data<T>();
  T* out = dx.data<T>();
  // Only the coordinate on `axis` changes between dY and dX, so slabs of dim 0 write disjoint
  // parts of dX when axis != 0.
  const int64_t slabs = axis == 0 ? 1 : is[0], rows_per_slab = rows / slabs;
  parallel_chunks(slabs, axis != 0 && dy.numel() >= kElementwiseParallelMin,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t row = begin * rows_per_slab; row < end * rows_per_slab; ++row) {
                      int64_t rem = row, off = 0;  // dX offset of the row, axis term left out
                      for (int d = r - 2; d >= 0; --d) {
                        const int64_t i = rem % is[d];
                        rem /= is[d];
                        if (d != axis) off += i * xst[d];
                      }
                      const T* s = g + row * inner;
                      const int64_t* ix = idx.data() + row * inner;
                      if (axis == r - 1) {
                        for (int64_t j = 0; j < inner; ++j) out[off + ix[j]] += s[j];
                      } else {
                        for (int64_t j = 0; j < inner; ++j)
                          out[off + j + ix[j] * xst[axis]] += s[j];
                      }
                    }
                  });
}

// ---- PadGrad ----------------------------------------------------------------------------------

template <class T>
class PadGradKernel : public OpKernel {
 public:
  explicit PadGradKernel(const Node& n)
      : pads_attr_(n.attr_ints("pads")), from_attrs_(n.has_attr("pads")) {
    mode_ = parse_pad_mode(n);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Shape xs = shape_input(ctx, 1);
    const int r = static_cast<int>(xs.size());
    const std::vector<int64_t> pads = from_attrs_ ? pads_attr_ : ctx.input(2).to_int_vector();
    const std::vector<int64_t> axes =
        from_attrs_ ? std::vector<int64_t>{} : optional_ints(ctx, 3);
    const PadAmounts pa = pad_amounts(ctx, xs, pads, axes);
    const std::vector<int64_t>& begin = pa.begin;
    Shape out = xs;
    for (int d = 0; d < r; ++d) out[d] = xs[d] + pa.begin[d] + pa.end[d];
    expect_shape(ctx, dy, out, "the padded input");
    Tensor& dx = zero_output(ctx, dy.dtype(), xs);
    if (dx.numel() == 0 || dy.numel() == 0) return;
    if (r == 0) {
      std::memcpy(dx.raw_data(), dy.raw_data(), dy.nbytes());
      return;
    }
    std::vector<InverseMap> inv(r);
    for (int d = 0; d < r; ++d)
      inv[d] = invert_pad_map(pad_axis_map(mode_, out[d], xs[d], begin[d]), xs[d]);
    const std::vector<int64_t> yst = contiguous_strides(out);
    const int64_t len = xs[r - 1], rows = dx.numel() / len;
    const T* g = dy.data<T>();
    T* o = dx.data<T>();
    const InverseMap& last = inv[r - 1];
    // Each dX row gathers from the dY rows whose leading coordinates map onto it (the Cartesian
    // product of the inverse maps), so rows are independent.
    parallel_chunks(rows, dy.numel() >= kElementwiseParallelMin, [&](int64_t b, int64_t e) {
      std::vector<int64_t> j(r, 0), c(r, 0);
      for (int64_t row = b; row < e; ++row) {
        int64_t rem = row;
        bool empty = false;
        for (int d = r - 2; d >= 0; --d) {
          j[d] = rem % xs[d];
          rem /= xs[d];
          c[d] = inv[d].first[j[d]];
          empty |= c[d] == inv[d].first[j[d] + 1];
        }
        if (empty) continue;
        T* dst = o + row * len;
        while (true) {
          int64_t off = 0;
          for (int d = 0; d < r - 1; ++d) off += inv[d].pos[c[d]] * yst[d];
          const T* src = g + off;
          for (int64_t x = 0; x < len; ++x)
            for (int64_t p = last.first[x]; p < last.first[x + 1]; ++p) dst[x] += src[last.pos[p]];
          int d = r - 2;  // next combination of source rows
          for (; d >= 0; --d) {
            if (++c[d] < inv[d].first[j[d] + 1]) break;
            c[d] = inv[d].first[j[d]];
          }
          if (d < 0) break;
        }
      }
    });
  }

 private:
  std::vector<int64_t> pads_attr_;
  bool from_attrs_;
  PadMode mode_ = PadMode::Constant;
};

// ---- ConcatGrad -------------------------------------------------------------------------------

void concat_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const int n = ctx.num_inputs() - 1, r = dy.rank();
  if (r == 0) ctx.fail("cannot split a scalar gradient");
  const int axis = normalize_axis(ctx, ctx.node().attr_int("axis", 1), r);
  std::vector<Shape> xs(n);
  int64_t total = 0;
  for (int k = 0; k < n; ++k) {
    xs[k] = shape_input(ctx, k + 1);
    bool ok = static_cast<int>(xs[k].size()) == r;
    for (int d = 0; ok && d < r; ++d) ok = d == axis || xs[k][d] == dy.shape()[d];
    if (!ok)
      ctx.fail(cat("input ", k, " of shape ", shape_str(xs[k]), " is not a part of gradient ",
                   shape_str(dy.shape()), " along axis ", axis));
    total += xs[k][axis];
  }
  if (total != dy.shape()[axis])
    ctx.fail(cat("the inputs' sizes along axis ", axis, " add up to ", total, ", gradient is ",
                 shape_str(dy.shape())));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dy.shape()[d];
  for (int d = axis + 1; d < r; ++d) inner *= dy.shape()[d];
  const size_t es = dtype_size(dy.dtype());
  const size_t row = static_cast<size_t>(total * inner) * es;
  std::vector<char*> dst(n, nullptr);
  std::vector<size_t> block(n), prefix(n + 1, 0);
  for (int k = 0; k < n; ++k) {
    block[k] = static_cast<size_t>(xs[k][axis] * inner) * es;
    prefix[k + 1] = prefix[k] + block[k];
    if (ctx.output_requested(k))
      dst[k] = static_cast<char*>(ctx.allocate_output(k, dy.dtype(), xs[k]).raw_data());
  }
  const char* src = static_cast<const char*>(dy.raw_data());
  parallel_chunks(outer * n, static_cast<int64_t>(dy.nbytes()) >= kParallelBytes,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t u = begin; u < end; ++u) {
                      const int64_t o = u / n, k = u % n;
                      if (dst[k] && block[k])
                        std::memcpy(dst[k] + o * block[k], src + o * row + prefix[k], block[k]);
                    }
                  });
}

// ---- TileGrad ---------------------------------------------------------------------------------

template <class T>
void tile_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const int r = static_cast<int>(xs.size());
  bool ok = dy.rank() == r;
  std::vector<int64_t> rep(r, 1);
  for (int d = 0; ok && d < r; ++d) {
    ok = xs[d] == 0 ? dy.shape()[d] == 0 : dy.shape()[d] % xs[d] == 0;
    if (ok && xs[d] > 0) rep[d] = dy.shape()[d] / xs[d];
  }
  if (!ok)
    ctx.fail(cat("gradient ", shape_str(dy.shape()), " is not a tiling of input ", shape_str(xs)));
  Tensor& dx = zero_output(ctx, dy.dtype(), xs);
  if (dx.numel() == 0 || dy.numel() == 0) return;
  if (r == 0) {
    dx.data<T>()[0] = dy.data<T>()[0];
    return;
  }
  const std::vector<int64_t> yst = contiguous_strides(dy.shape());
  const int64_t len = xs[r - 1], rows = dx.numel() / len;
  int64_t tiles = 1;  // tiles over the leading dims
  for (int d = 0; d < r - 1; ++d) tiles *= rep[d];
  const T* g = dy.data<T>();
  T* out = dx.data<T>();
  // Each dX row sums the matching row of every tile, and within a row the rep[r-1] copies.
  parallel_chunks(rows, dy.numel() >= kElementwiseParallelMin, [&](int64_t b, int64_t e) {
    std::vector<int64_t> j(r, 0);
    for (int64_t row = b; row < e; ++row) {
      int64_t rem = row;
      for (int d = r - 2; d >= 0; --d) {
        j[d] = rem % xs[d];
        rem /= xs[d];
      }
      T* dst = out + row * len;
      for (int64_t t = 0; t < tiles; ++t) {
        int64_t trem = t, off = 0;
        for (int d = r - 2; d >= 0; --d) {
          off += (trem % rep[d] * xs[d] + j[d]) * yst[d];
          trem /= rep[d];
        }
        for (int64_t c = 0; c < rep[r - 1]; ++c) {
          const T* src = g + off + c * len;
          for (int64_t x = 0; x < len; ++x) dst[x] += src[x];
        }
      }
    }
  });
}

// ---- DropoutGrad ------------------------------------------------------------------------------

template <class T>
void dropout_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Node& n = ctx.node();
  double ratio = n.attr_float("ratio", 0.5f);
  bool training = n.attr_int("training", 1) != 0;
  if (const Tensor* t = ctx.input_or_null(2)) ratio = t->item_as_double();
  if (const Tensor* t = ctx.input_or_null(3)) training = t->item_as_int() != 0;
  if (!training || ratio == 0) return ctx.set_output(0, dy);
  const Tensor& mask = ctx.input(1);
  if (mask.shape() != dy.shape())
    ctx.fail(
        cat("mask ", shape_str(mask.shape()), " does not match gradient ", shape_str(dy.shape())));
  // F16/BF16: dY·scale in float, rounded once (as the forward Dropout).
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const C scale = static_cast<C>(1.0 / (1.0 - ratio));
  const T* g = dy.data<T>();
  T* out = ctx.allocate_output(0, dy.dtype(), dy.shape()).template data<T>();
  dispatch_dtype(mask.dtype(), [&](auto tag) {  // bool from opset 10, X's dtype before
    using M = decltype(tag);
    const M* m = mask.data<M>();
    parallel_ranges(dy.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        out[i] = m[i] != M(0) ? static_cast<T>(static_cast<C>(g[i]) * scale) : T(0);
    });
  });
}

}  // namespace

void register_grad_movement(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  const auto moves = {DType::F32, DType::F64, DType::F16, DType::BF16};  // copies only
  r.add(OpId::SliceGrad, cpu, moves, kernel_factory<SliceGradKernel>());
  r.add(OpId::ConcatGrad, cpu, moves, function_kernel(concat_grad));
  r.add(OpId::GatherGrad, cpu, DType::F32, function_kernel(gather_grad<float>));
  r.add(OpId::GatherGrad, cpu, kLowFloats, in_fp32(function_kernel(gather_grad<float>)));
  r.add(OpId::GatherGrad, cpu, DType::F64, function_kernel(gather_grad<double>));
  r.add(OpId::GatherElementsGrad, cpu, DType::F32, function_kernel(gather_elements_grad<float>));
  r.add(OpId::GatherElementsGrad, cpu, kLowFloats,
        in_fp32(function_kernel(gather_elements_grad<float>)));
  r.add(OpId::GatherElementsGrad, cpu, DType::F64, function_kernel(gather_elements_grad<double>));
  r.add(OpId::PadGrad, cpu, DType::F32, kernel_factory<PadGradKernel<float>>());
  r.add(OpId::PadGrad, cpu, kLowFloats, in_fp32(kernel_factory<PadGradKernel<float>>()));
  r.add(OpId::PadGrad, cpu, DType::F64, kernel_factory<PadGradKernel<double>>());
  r.add(OpId::TileGrad, cpu, DType::F32, function_kernel(tile_grad<float>));
  r.add(OpId::TileGrad, cpu, kLowFloats, in_fp32(function_kernel(tile_grad<float>)));
  r.add(OpId::TileGrad, cpu, DType::F64, function_kernel(tile_grad<double>));
  r.add(OpId::DropoutGrad, cpu, DType::F32, function_kernel(dropout_grad<float>));
  r.add(OpId::DropoutGrad, cpu, DType::F64, function_kernel(dropout_grad<double>));
  r.add(OpId::DropoutGrad, cpu, DType::F16, function_kernel(dropout_grad<Eigen::half>));
  r.add(OpId::DropoutGrad, cpu, DType::BF16, function_kernel(dropout_grad<Eigen::bfloat16>));
}

}  // namespace oat::cpu
