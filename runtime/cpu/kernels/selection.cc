// Ops whose output length depends on the input values: Compress, Unique, NonZero. On CUDA they run
// on the host, their device inputs downloaded (runtime/cuda/README.md "Host-placed ops"). Compress
// trains as the Gather it is (train/autodiff/grads/shape.cc); training through Unique is refused,
// naming the node; NonZero's integer output carries no gradient, as ArgMax's.
//
// Compress (opsets 9, 11): the slices of `input` along `axis` whose `condition` (1-D bool) entry
// is true, in order; without axis, the elements of the flattened input. A condition shorter than
// the axis selects nothing past its end; entries past the axis are ignored (ONNX Runtime's rule).
// axis in [−rank, rank) (negative from opset 11). Any dtype (bytes).
//   Y[.., j, ..] = input[.., k_j, ..], k_j the j-th index with condition[k] true
//
// Unique (opset 11): the distinct elements of the flattened X (no axis), or the distinct slices
// X[.., k, ..] along `axis`, compared element by element. Outputs:
//   Y              the distinct values/slices: ascending (sorted = 1, default; slices
//                  lexicographically in row-major order) or in order of first occurrence
//                  (sorted = 0)
//   indices        [U] int64: where each Y first occurs in X (flattened / along axis)
//   inverse_indices [n] int64: for each element/slice of X, its position in Y
//   counts         [U] int64: how often each Y occurs
// Float NaNs are equal to each other and sort after every number (numpy ≥ 1.21's equal_nan); −0
// and +0 are equal (the first one seen is kept). F16/BF16 compare their widened values (exact).
//
// NonZero (opsets 9, 13): the indices of X's non-zero elements, int64 [rank(X), count], column j
// the coordinates of the j-th non-zero element in row-major order (numpy's nonzero stacked; a
// scalar X gives [0, count], count 0 or 1, as ONNX Runtime). NaN is non-zero, −0 is zero. Any
// dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// Normalised axis of `rank` from attribute `axis`, or -1 when absent.
int axis_of(const KernelContext& ctx, int rank) {
  const Node& n = ctx.node();
  if (!n.has_attr("axis")) return -1;
  const int64_t a = n.attr_int("axis", 0);
  if (a < -rank || a >= rank)
    ctx.fail(cat("axis ", a, " is out of range for an input of rank ", rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

void compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DType::Bool)
    ctx.fail(cat("condition must be bool, got ", dtype_name(cond.dtype())));
  if (cond.rank() != 1)
    ctx.fail(cat("condition must be 1-D, got ", shape_str(cond.shape())));
  const int axis = axis_of(ctx, x.rank());
  // View X as [outer, len, inner] around the axis (no axis: [1, numel, 1]).
  int64_t outer = 1, len = x.numel(), inner = 1;
  if (axis >= 0) {
    len = x.dim(axis);
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  std::vector<int64_t> keep;
  const bool* c = cond.data<bool>();
  for (int64_t k = 0; k < std::min(len, cond.numel()); ++k)
    if (c[k]) keep.push_back(k);
  const int64_t nk = static_cast<int64_t>(keep.size());
  Shape ys = {nk};
  if (axis >= 0) {
    ys = x.shape();
    ys[axis] = nk;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
  const size_t row = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < nk; ++j)
      std::memcpy(dst + static_cast<size_t>(o * nk + j) * row,
                  src + static_cast<size_t>(o * len + keep[j]) * row, row);
}

// Total order on values: NaN after every number and equal to NaN; −0 == +0.
template <class T>
int compare(T a, T b) {
  const auto x = widen(a), y = widen(b);
  if constexpr (std::is_floating_point_v<decltype(x)>) {
    const bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
  }
  return x < y ? -1 : (y < x ? 1 : 0);
}

template <class T>
void unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t sorted = ctx.node().attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1) ctx.fail(cat("sorted must be 0 or 1, got ", sorted));
  const int axis = axis_of(ctx, x.rank());
  int64_t outer = 1, len = x.numel(), inner = 1;
  if (axis >= 0) {
    len = x.dim(axis);
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  const T* xp = x.data<T>();
  // Slice k: the elements xp[(o·len + k)·inner + i], compared in (o, i) order.
  auto cmp = [&](int64_t p, int64_t q) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int r = compare(xp[(o * len + p) * inner + i], xp[(o * len + q) * inner + i]);
        if (r != 0) return r;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(len));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return cmp(p, q) < 0; });
  // Groups of equal slices in ascending order; each group's first index is its first occurrence.
  std::vector<int64_t> first, count, group_of(static_cast<size_t>(len));
  for (size_t s = 0; s < order.size(); ++s) {
    if (s == 0 || cmp(order[s - 1], order[s]) != 0) {
      first.push_back(order[s]);
      count.push_back(0);
    }
    group_of[order[s]] = static_cast<int64_t>(first.size()) - 1;
    ++count.back();
  }
  const int64_t nu = static_cast<int64_t>(first.size());
  // Output position of each group: ascending, or by first occurrence.
  std::vector<int64_t> pos(static_cast<size_t>(nu));
  std::iota(pos.begin(), pos.end(), int64_t{0});
  if (sorted == 0) {
    std::vector<int64_t> by_first(static_cast<size_t>(nu));
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t j = 0; j < nu; ++j) pos[by_first[j]] = j;
  }
  Shape ys = {nu};
  if (axis >= 0) {
    ys = x.shape();
    ys[axis] = nu;
  }
  T* yp = ctx.allocate_output(0, x.dtype(), ys).template data<T>();
  for (int64_t g = 0; g < nu; ++g)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        yp[(o * nu + pos[g]) * inner + i] = xp[(o * len + first[g]) * inner + i];
  if (ctx.output_requested(1)) {
    int64_t* p = ctx.allocate_output(1, DType::I64, {nu}).template data<int64_t>();
    for (int64_t g = 0; g < nu; ++g) p[pos[g]] = first[g];
  }
  if (ctx.output_requested(2)) {
    int64_t* p = ctx.allocate_output(2, DType::I64, {len}).template data<int64_t>();
    for (int64_t k = 0; k < len; ++k) p[k] = pos[group_of[k]];
  }
  if (ctx.output_requested(3)) {
    int64_t* p = ctx.allocate_output(3, DType::I64, {nu}).template data<int64_t>();
    for (int64_t g = 0; g < nu; ++g) p[pos[g]] = count[g];
  }
}

template <class T>
void non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const T* xp = x.data<T>();
  const int64_t n = x.numel();
  std::vector<int64_t> at;
  for (int64_t i = 0; i < n; ++i)
    if (widen(xp[i]) != decltype(widen(xp[i])){0}) at.push_back(i);
  const int64_t count = static_cast<int64_t>(at.size()), rank = x.rank();
  int64_t* y = ctx.allocate_output(0, DType::I64, {rank, count}).template data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t flat = at[j];
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t size = x.dim(static_cast<int>(d));
      y[d * count + j] = flat % size;
      flat /= size;
    }
  }
}

}  // namespace

void register_selection(KernelRegistry& r) {
  r.add(OpId::NonZero, Device::CPU, DType::F32, function_kernel(non_zero<float>));
  r.add(OpId::NonZero, Device::CPU, DType::F64, function_kernel(non_zero<double>));
  r.add(OpId::NonZero, Device::CPU, DType::F16, function_kernel(non_zero<Eigen::half>));
  r.add(OpId::NonZero, Device::CPU, DType::BF16, function_kernel(non_zero<Eigen::bfloat16>));
  r.add(OpId::NonZero, Device::CPU, DType::I64, function_kernel(non_zero<int64_t>));
  r.add(OpId::NonZero, Device::CPU, DType::I32, function_kernel(non_zero<int32_t>));
  r.add(OpId::NonZero, Device::CPU, DType::I8, function_kernel(non_zero<int8_t>));
  r.add(OpId::NonZero, Device::CPU, DType::U8, function_kernel(non_zero<uint8_t>));
  r.add(OpId::NonZero, Device::CPU, DType::Bool, function_kernel(non_zero<bool>));
  r.add(OpId::Compress, Device::CPU, kAnyDType, function_kernel(compress));
  r.add(OpId::Unique, Device::CPU, DType::F32, function_kernel(unique<float>));
  r.add(OpId::Unique, Device::CPU, DType::F64, function_kernel(unique<double>));
  r.add(OpId::Unique, Device::CPU, DType::F16, function_kernel(unique<Eigen::half>));
  r.add(OpId::Unique, Device::CPU, DType::BF16, function_kernel(unique<Eigen::bfloat16>));
  r.add(OpId::Unique, Device::CPU, DType::I64, function_kernel(unique<int64_t>));
  r.add(OpId::Unique, Device::CPU, DType::I32, function_kernel(unique<int32_t>));
  r.add(OpId::Unique, Device::CPU, DType::I8, function_kernel(unique<int8_t>));
  r.add(OpId::Unique, Device::CPU, DType::U8, function_kernel(unique<uint8_t>));
}

}  // namespace oat::cpu
