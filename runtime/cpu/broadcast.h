// Numpy-style (multidirectional) broadcasting, as ONNX defines it: shapes are right-aligned,
// and each dimension pair must be equal or contain a 1.
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include "runtime/tensor.h"
#include "runtime/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oat::cpu {

// The broadcast result of `shapes`; throws Error "cannot broadcast [..] with [..]".
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Element strides of `in` viewed with shape `out` (in right-aligned against out): 0 where `in`
// is broadcast along a dimension. Requires in to be broadcastable to out.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Iterates over every element of `out`, keeping one offset per operand. The innermost
// dimension is handed to `f(offsets, inner_strides, count)` as one run, so callers write a tight
// loop: for k in [0,count): out[o+k] = op(a[oa + k*sa], b[ob + k*sb]).
// `operands` includes the output itself (stride = contiguous) as operand 0.
template <class F>
void for_each_broadcast_run(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                            F&& f) {
  const int rank = static_cast<int>(out.size());
  const size_t nops = strides.size();
  std::vector<int64_t> offsets(nops, 0);
  std::vector<int64_t> inner(nops, 0);
  if (numel(out) == 0) return;
  if (rank == 0) {
    f(offsets, inner, int64_t{1});
    return;
  }
  for (size_t k = 0; k < nops; ++k) inner[k] = strides[k][rank - 1];
  const int64_t count = out[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  while (true) {
    f(offsets, inner, count);
    int d = rank - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < nops; ++k) offsets[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < nops; ++k) offsets[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Contiguous row-major strides of `s`.
std::vector<int64_t> contiguous_strides(const Shape& s);

// The broadcast of N inputs to a contiguous output, with dimensions of size 1 dropped and
// adjacent dimensions merged wherever every input is contiguous (or broadcast) across both. Then
// same-shape operands become one dimension with stride 1, a scalar one with stride 0, and
// [N,C,H,W] + [1,C,1,1] becomes [N,C,H*W] with bias strides [0,1,0]: the innermost run is
// always as long as the layout allows, and each input's innermost stride is 0 or 1.
template <size_t N>
struct BroadcastLayout {
  Shape dims;                                   // rank >= 1; numel(dims) == numel(out)
  std::array<std::vector<int64_t>, N> strides;  // per input, per dim (elements)
  int64_t total = 0;                            // number of output elements
};

template <size_t N>
BroadcastLayout<N> broadcast_layout(const Shape& out, const std::array<Shape, N>& ins) {
  BroadcastLayout<N> L;
  L.total = numel(out);
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) full[k] = broadcast_strides(ins[k], out);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !L.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = L.strides[k].back() == full[k][d] * out[d];
    if (merge) {
      L.dims.back() *= out[d];
      for (size_t k = 0; k < N; ++k) L.strides[k].back() = full[k][d];
    } else {
      L.dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k) L.strides[k].push_back(full[k][d]);
    }
  }
  if (L.dims.empty()) {  // a scalar or all-ones output: one element
    L.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) L.strides[k].push_back(0);
  }
  return L;
}

// Below this many output elements an elementwise loop runs on one thread: forking costs more
// than it saves (runtime/threads.h).
constexpr int64_t kElementwiseParallelMin = kParallelMinElements;

// Calls f(begin, end) on consecutive ranges covering [0, n): one range below
// kElementwiseParallelMin, else one per OpenMP thread, split at 64-element (cache line) blocks.
// `f` must not throw (an exception cannot leave an OpenMP region).
template <class F>
void parallel_ranges(int64_t n, F&& f) {
  if (n < kElementwiseParallelMin) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
#ifdef _OPENMP
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
#else
    const int64_t nt = 1, t = 0;
#endif
    const int64_t blocks = (n + 63) / 64;
    const int64_t b = std::min(n, blocks * t / nt * 64),
                  e = std::min(n, blocks * (t + 1) / nt * 64);
    if (b < e) f(b, e);
  }
}

// Hands every output element of `L` to f(out_offset, in_offsets, in_inner_strides, count) in
// runs along the innermost dimension: out[out_offset + i] for i < count reads input k at
// in_offsets[k] + i * in_inner_strides[k]. Above kElementwiseParallelMin elements the flat output
// range is split evenly (in 64-element blocks) across the OpenMP threads, so one long run (same
// shapes) parallelises as well as many short ones. `f` must not throw.
template <size_t N, class F>
void parallel_broadcast_runs(const BroadcastLayout<N>& L, F&& f) {
  const int rank = static_cast<int>(L.dims.size());
  const int64_t last = L.dims[rank - 1];
  std::array<int64_t, N> inner;
  for (size_t k = 0; k < N; ++k) inner[k] = L.strides[k][rank - 1];
  auto range = [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    // Multi-index of `begin`, and each input's offset there.
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, N> off{};
    int64_t rem = begin;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % L.dims[d];
      rem /= L.dims[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * L.strides[k][d];
    }
    int64_t e = begin;
    while (e < end) {
      const int64_t count = std::min(last - idx[rank - 1], end - e);
      f(e, off, inner, count);
      e += count;
      idx[rank - 1] += count;
      for (size_t k = 0; k < N; ++k) off[k] += count * inner[k];
      // Carry into the outer dimensions.
      for (int d = rank - 1; d > 0 && idx[d] == L.dims[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (size_t k = 0; k < N; ++k) off[k] += L.strides[k][d - 1] - L.strides[k][d] * L.dims[d];
      }
    }
  };
  parallel_ranges(L.total, range);
}

}  // namespace oat::cpu
