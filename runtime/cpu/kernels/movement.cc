// Data-movement kernels that copy whole contiguous blocks: Concat, Split, Tile. Transpose, Slice,
// Gather/GatherElements and Pad live in their own files and register from register_movement().
//
// Concat and Split view a tensor as [outer, dim(axis) * inner]: every outer row of each input is
// one memcpy into (or out of) the output row. All of these are dtype-agnostic (kAnyDType).
#include "runtime/cpu/kernels/movement.h"

#include <algorithm>

#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// (prod of dims before axis, prod of dims after axis)
std::pair<int64_t, int64_t> outer_inner(const Shape& s, int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < static_cast<int>(s.size()); ++d) inner *= s[d];
  return {outer, inner};
}

}  // namespace

void concat_blocks(const std::vector<const Tensor*>& xs, int axis, Tensor& y) {
  if (y.numel() == 0) return;
  const int n = static_cast<int>(xs.size());
  const auto [outer, inner] = outer_inner(y.shape(), axis);
  const size_t es = dtype_size(y.dtype());
  std::vector<size_t> block(n), prefix(n + 1, 0);  // bytes per outer row of each input
  std::vector<const char*> src(n);
  for (int i = 0; i < n; ++i) {
    block[i] = static_cast<size_t>(xs[i]->shape()[axis] * inner) * es;
    prefix[i + 1] = prefix[i] + block[i];
    src[i] = static_cast<const char*>(xs[i]->raw_data());
  }
  char* dst = static_cast<char*>(y.raw_data());
  const size_t row = prefix[n];
  parallel_chunks(outer * n, static_cast<int64_t>(y.nbytes()) >= kParallelBytes,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t u = begin; u < end; ++u) {
                      const int64_t o = u / n, i = u % n;
                      if (block[i])
                        std::memcpy(dst + o * row + prefix[i], src[i] + o * block[i], block[i]);
                    }
                  });
}

void split_blocks(const Tensor& x, int axis, const std::vector<int64_t>& sizes,
                  const std::vector<Tensor*>& ys) {
  const int n = static_cast<int>(sizes.size());
  const auto [outer, inner] = outer_inner(x.shape(), axis);
  const size_t es = dtype_size(x.dtype());
  const size_t row = static_cast<size_t>(x.shape()[axis] * inner) * es;
  std::vector<char*> dst(n, nullptr);
  std::vector<size_t> block(n), prefix(n + 1, 0);
  for (int k = 0; k < n; ++k) {
    block[k] = static_cast<size_t>(sizes[k] * inner) * es;
    prefix[k + 1] = prefix[k] + block[k];
    if (ys[k]) dst[k] = static_cast<char*>(ys[k]->raw_data());
  }
  const char* src = static_cast<const char*>(x.raw_data());
  parallel_chunks(outer * n, static_cast<int64_t>(x.nbytes()) >= kParallelBytes,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t u = begin; u < end; ++u) {
                      const int64_t o = u / n, k = u % n;
                      if (dst[k] && block[k])
                        std::memcpy(dst[k] + o * block[k], src + o * row + prefix[k], block[k]);
                    }
                  });
}

namespace {

// Concat: Y = [X_0 | X_1 | ...] along `axis` (negative counts from the end; default 1 before
// opset 4). All inputs have one dtype and equal dims except `axis`.
class ConcatKernel : public OpKernel {
 public:
  explicit ConcatKernel(const Node& n) : axis_(n.attr_int("axis", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x0 = ctx.input(0);
    const int r = x0.rank();
    if (r == 0) ctx.fail("cannot concatenate scalars");
    const int axis = normalize_axis(ctx, axis_, r);
    const int n = ctx.num_inputs();
    Shape out = x0.shape();
    out[axis] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& xi = ctx.input(i);
      bool ok = xi.rank() == r && xi.dtype() == x0.dtype();
      for (int d = 0; ok && d < r; ++d) ok = d == axis || xi.shape()[d] == x0.shape()[d];
      if (!ok)
        ctx.fail(cat("input ", i, " (", dtype_name(xi.dtype()), " ", shape_str(xi.shape()),
                     ") does not match input 0 (", dtype_name(x0.dtype()), " ",
                     shape_str(x0.shape()), ") outside axis ", axis));
      out[axis] += xi.shape()[axis];
    }
    Tensor& y = ctx.allocate_output(0, x0.dtype(), out);
    std::vector<const Tensor*> xs;
    for (int i = 0; i < n; ++i) xs.push_back(&ctx.input(i));
    concat_blocks(xs, axis, y);
  }

 private:
  int64_t axis_;
};

// Split: Y_k = X[..., offset_k : offset_k + split[k], ...] along `axis` (default 0). The sizes are
// the 'split' attribute (before opset 13) or input 1 (from 13); otherwise, from opset 18,
// 'num_outputs' chunks of ceil(dim / n) with a smaller last one; otherwise equal parts.
class SplitKernel : public OpKernel {
 public:
  explicit SplitKernel(const Node& n)
      : axis_(n.attr_int("axis", 0)),
        split_attr_(n.attr_ints("split")),
        has_split_attr_(n.has_attr("split")),
        num_outputs_(n.attr_int("num_outputs", 0)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int axis = normalize_axis(ctx, axis_, x.rank());
    const int64_t dim = x.shape()[axis];
    const int n = ctx.num_outputs();
    std::vector<int64_t> sizes;
    if (has_split_attr_) {
      sizes = split_attr_;
    } else if (ctx.has_input(1)) {
      sizes = ctx.input(1).to_int_vector();
    } else if (num_outputs_ > 0) {
      if (num_outputs_ != n)
        ctx.fail(cat("num_outputs is ", num_outputs_, " but the node has ", n, " outputs"));
      const int64_t chunk = (dim + n - 1) / n;
      for (int k = 0; k < n; ++k)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
    } else {
      if (dim % n != 0)
        ctx.fail(cat("axis ", axis, " of ", shape_str(x.shape()), " does not split into ", n,
                     " equal parts"));
      sizes.assign(n, dim / n);
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail(cat("split ", shape_str(sizes), " has a negative size"));
      total += s;
    }
    if (static_cast<int>(sizes.size()) != n || total != dim)
      ctx.fail(cat("split ", shape_str(sizes), " does not divide axis ", axis, " of ",
                   shape_str(x.shape()), " into ", n, " outputs"));
    std::vector<Tensor*> ys(n, nullptr);
    for (int k = 0; k < n; ++k) {
      if (!ctx.output_requested(k)) continue;
      Shape s = x.shape();
      s[axis] = sizes[k];
      ys[k] = &ctx.allocate_output(k, x.dtype(), s);
    }
    split_blocks(x, axis, sizes, ys);
  }

 private:
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  bool has_split_attr_;
  int64_t num_outputs_;
};

// Tile: Y[i] = X[i mod X.shape] with Y.shape[d] = X.shape[d] * repeats[d] (opset 6+).
// Each output row is the source row copied once, then doubled in place until it is full.
void tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.node().opset < 6)
    throw Unsupported(cat(ctx.node().describe(), ": Tile before opset 6 (tiles/axis inputs)"),
                      "Tile(opset<6)");
  const std::vector<int64_t> rep = ctx.input(1).to_int_vector();
  const int r = x.rank();
  if (static_cast<int>(rep.size()) != r)
    ctx.fail(cat("repeats ", shape_str(rep), " do not match input ", shape_str(x.shape())));
  Shape out(r);
  for (int d = 0; d < r; ++d) {
    if (rep[d] < 0) ctx.fail(cat("repeats ", shape_str(rep), " has a negative entry"));
    out[d] = x.shape()[d] * rep[d];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  if (r == 0) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  const size_t es = dtype_size(x.dtype());
  const size_t in_row = static_cast<size_t>(x.shape()[r - 1]) * es;
  const size_t out_row = static_cast<size_t>(out[r - 1]) * es;
  const std::vector<int64_t> in_rows_st = [&] {
    std::vector<int64_t> st(r, 1);  // input row stride of each leading dim, in rows
    for (int d = r - 3; d >= 0; --d) st[d] = st[d + 1] * x.shape()[d + 1];
    return st;
  }();
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= out[d];
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  parallel_chunks(rows, static_cast<int64_t>(y.nbytes()) >= kParallelBytes,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t row = begin; row < end; ++row) {
                      int64_t rem = row, src_row = 0;
                      for (int d = r - 2; d >= 0; --d) {
                        const int64_t i = rem % out[d];
                        rem /= out[d];
                        src_row += (i % x.shape()[d]) * in_rows_st[d];
                      }
                      char* d = dst + row * out_row;
                      std::memcpy(d, src + src_row * in_row, in_row);
                      for (size_t filled = in_row; filled < out_row;) {
                        const size_t n = std::min(filled, out_row - filled);
                        std::memcpy(d + filled, d, n);
                        filled += n;
                      }
                    }
                  });
}

}  // namespace

void register_movement(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  r.add(OpId::Concat, cpu, kAnyDType, kernel_factory<ConcatKernel>());
  r.add(OpId::Split, cpu, kAnyDType, kernel_factory<SplitKernel>());
  r.add(OpId::Tile, cpu, kAnyDType, function_kernel(tile));
  register_transpose(r);
  register_slice(r);
  register_gather(r);
  register_pad(r);
  register_trilu(r);
}

}  // namespace oat::cpu
