// Slice's geometry (the index rule at the top of slice.cc), shared by Slice (slice.cc) and its
// gradient SliceGrad (grad_movement.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"

namespace oat::cpu {

// The slice of a contiguous X [xs]: Y[k] = X[base + Σ_d k_d·strides[d]].
struct SliceGeometry {
  Shape out;                     // Y's shape
  int64_t base = 0;              // X's element offset of Y's first element
  std::vector<int64_t> strides;  // X's element stride per step of each of Y's axes
};

// `axes` empty: 0, 1, ..; `steps` empty: all 1. Fails unless starts, ends, axes and steps have one
// length, on an axis out of range, on a step of 0, and (with reject_repeated_axes) on an axis
// listed twice.
inline SliceGeometry slice_geometry(const KernelContext& ctx, const Shape& xs,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                    std::vector<int64_t> steps, bool reject_repeated_axes) {
  const int r = static_cast<int>(xs.size());
  const size_t k = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(k, 1);
  if (ends.size() != k || axes.size() != k || steps.size() != k)
    ctx.fail(cat("starts ", shape_str(starts), ", ends ", shape_str(ends), ", axes ",
                 shape_str(axes), " and steps ", shape_str(steps), " differ in length"));
  std::vector<int64_t> start(r, 0), step(r, 1);
  SliceGeometry g;
  g.out = xs;
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < k; ++i) {
    const int a = normalize_axis(ctx, axes[i], r, "slice axis");
    if (reject_repeated_axes && seen[a])
      ctx.fail(cat("slice axis ", axes[i], " is repeated in ", shape_str(axes)));
    seen[a] = true;
    const int64_t n = xs[a], st = steps[i];
    if (st == 0) ctx.fail(cat("slice step for axis ", axes[i], " is 0"));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += n;
    if (e < 0) e += n;
    int64_t count;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      count = b > e ? (b - e - 1) / -std::max(st, -n - 1) + 1 : 0;  // no -INT64_MIN
    }
    start[a] = b;
    step[a] = count > 1 ? st : 1;  // a huge step taking one element must not overflow offsets
    g.out[a] = count;
  }
  const std::vector<int64_t> in_st = contiguous_strides(xs);
  g.strides.resize(r);
  for (int d = 0; d < r; ++d) {
    g.base += start[d] * in_st[d];
    g.strides[d] = step[d] * in_st[d];
  }
  return g;
}

}  // namespace oat::cpu
