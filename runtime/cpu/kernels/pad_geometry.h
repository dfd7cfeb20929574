// Pad's index rule, shared by Pad (pad.cc) and its gradient PadGrad (grad_movement.cc), and by
// the CUDA Pad and PadGrad (runtime/cuda/kernels/pad.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/graph.h"

namespace oat::cpu {

enum class PadMode { Constant, Reflect, Edge, Wrap };

// The node's "mode" attribute (default "constant"); an unknown mode is an error naming the node.
inline PadMode parse_pad_mode(const Node& n) {
  const std::string m = n.attr_string("mode", "constant");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  if (m == "wrap") return PadMode::Wrap;
  throw Error(cat(n.describe(), ": unknown pad mode '", m, "'"));
}

// Source index along one axis for each of the out_n output positions of an axis of size n padded
// by pad_begin in front, -1 where the constant goes:
//   j = i - pad_begin inside; outside: edge clamps, wrap is j mod n, reflect mirrors about the
//   ends without repeating them (period 2(n-1)).
inline std::vector<int64_t> pad_axis_map(PadMode mode, int64_t out_n, int64_t n,
                                         int64_t pad_begin) {
  std::vector<int64_t> m(out_n);
  for (int64_t i = 0; i < out_n; ++i) {
    int64_t j = i - pad_begin;
    if (j < 0 || j >= n) {
      switch (mode) {
        case PadMode::Constant:
          j = -1;
          break;
        case PadMode::Edge:
          j = std::clamp<int64_t>(j, 0, n - 1);
          break;
        case PadMode::Wrap:
          j = ((j % n) + n) % n;
          break;
        case PadMode::Reflect:
          if (n == 1) {
            j = 0;
            break;
          }
          j %= 2 * (n - 1);
          if (j < 0) j += 2 * (n - 1);
          if (j >= n) j = 2 * (n - 1) - j;
          break;
      }
    }
    m[i] = j;
  }
  return m;
}

// The inverse of an axis map (pad_axis_map) over a source axis of size n, as CSR: the output
// positions reading source j are pos[first[j] .. first[j + 1]), in increasing order.
struct InverseMap {
  std::vector<int64_t> first, pos;
};
inline InverseMap invert_pad_map(const std::vector<int64_t>& map, int64_t n) {
  InverseMap inv;
  inv.first.assign(n + 1, 0);
  for (int64_t s : map)
    if (s >= 0) ++inv.first[s + 1];
  for (int64_t j = 0; j < n; ++j) inv.first[j + 1] += inv.first[j];
  inv.pos.resize(inv.first[n]);
  std::vector<int64_t> fill(inv.first.begin(), inv.first.end() - 1);
  for (int64_t i = 0; i < static_cast<int64_t>(map.size()); ++i)
    if (map[i] >= 0) inv.pos[fill[map[i]]++] = i;
  return inv;
}

// Pad amounts per axis of an input of shape xs (Pad, PadGrad; CPU and CUDA): `pads` holds 2
// entries per padded axis (begins, then ends), `axes` the padded axes (empty: all).
struct PadAmounts {
  std::vector<int64_t> begin, end;
};
inline PadAmounts pad_amounts(const KernelContext& ctx, const Shape& xs,
                              const std::vector<int64_t>& pads, std::vector<int64_t> axes) {
  const int r = static_cast<int>(xs.size());
  if (axes.empty())
    for (int d = 0; d < r; ++d) axes.push_back(d);
  const size_t k = axes.size();
  if (pads.size() != 2 * k)
    ctx.fail(cat("pads ", shape_str(pads), " need 2 entries per padded axis (", k, ") of input ",
                 shape_str(xs)));
  PadAmounts p{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 0)};
  for (size_t i = 0; i < k; ++i) {
    const int a = normalize_axis(ctx, axes[i], r, "pad axis");
    p.begin[a] = pads[i];
    p.end[a] = pads[i + k];
  }
  return p;
}

// Pad's output shape: xs[d] + begin[d] + end[d] per axis. Fails when the (negative) pads crop an
// axis below zero, or pad an empty axis in any mode but constant (there is nothing to reflect,
// repeat or wrap).
inline Shape padded_shape(const KernelContext& ctx, const Shape& xs, const std::vector<int64_t>& pads,
                          const PadAmounts& pa, PadMode mode) {
  Shape out(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    out[d] = xs[d] + pa.begin[d] + pa.end[d];
    if (out[d] < 0)
      ctx.fail(cat("pads ", shape_str(pads), " crop input ", shape_str(xs), " below zero on axis ",
                   d));
    if (mode != PadMode::Constant && xs[d] == 0 && out[d] > 0)
      ctx.fail(cat("cannot pad an empty axis ", d, " of ", shape_str(xs),
                   " except in constant mode"));
  }
  return out;
}

}  // namespace oat::cpu
