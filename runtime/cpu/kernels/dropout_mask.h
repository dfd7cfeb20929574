// Dropout's mode and mask, shared by the CPU kernel (generator.cc) and the CUDA kernel
// (runtime/cuda/kernels/dropout.cc): for the same node and step both backends keep the same
// elements. Two streams:
//
// - With a `seed` attribute, the ONNX reference's (numpy's legacy generator: np.random.seed(seed);
//   u = np.random.uniform(0, 1, X.shape); keep = u >= ratio), which ONNX's conformance cases
//   expect: MT19937 seeded with `seed` (std::mt19937's seeding is numpy's init_genrand),
//   u = (a·2^26 + b) / 2^53 from two 32-bit draws a = w0 >> 5, b = w1 >> 6, element by element in
//   row-major order. Sequential by nature: the CUDA kernel draws it on the host.
// - Without one (what torch.onnx and tf2onnx write for training-mode Dropout), Philox4x32-10
//   (philox.h), counter-based as PyTorch's CUDA dropout: element i of the node's d-th draw is
//   word i mod 4 of Philox((i / 4, d), key = a hash of the node's name), u = (word >> 8) / 2^24.
//   The CUDA kernel computes it on the device (no host draw, no copy), with d kept in device
//   memory so that every replay of a captured CUDA graph draws the next mask.
// Each kernel owns its stream, started once, so successive training steps draw fresh masks and a
// run is reproducible.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "runtime/cpu/kernels/philox.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"

namespace oat::cpu {

// Whether a Dropout node draws numpy's MT19937 stream ('seed' given) or the Philox one.
inline bool dropout_is_seeded(const Node& n) { return n.has_attr("seed"); }

// The Philox key of an unseeded Dropout node: a hash of its name.
inline uint64_t dropout_philox_key(const Node& n) {
  return static_cast<uint64_t>(std::hash<std::string>{}(n.name));
}

// The MT19937 generator of a seeded Dropout node, from its 'seed' (unseeded nodes draw Philox and
// never use it).
inline std::mt19937 dropout_generator(const Node& n) {
  return std::mt19937(static_cast<std::mt19937::result_type>(n.attr_int("seed", 0)));
}

struct DropoutMode {
  double ratio = 0.5;
  bool training = false;
  DType mask_dtype = DType::Bool;
  bool drops() const { return training && ratio != 0; }  // else Y = X, mask all true
};

// The ratio is input 1 from opset 12 (default 0.5) and an attribute before; training mode is
// input 2 from opset 12, is_test == 0 before opset 7, and off for opsets 7-11. The mask is bool
// from opset 10 and X's dtype before. `ratio` and `training` are host tensors or null. A ratio
// outside [0, 1] fails naming the node.
inline DropoutMode dropout_mode(const KernelContext& ctx, const Tensor* ratio,
                                const Tensor* training) {
  const Node& n = ctx.node();
  DropoutMode m;
  m.ratio = n.attr_float("ratio", 0.5f);
  m.training = n.opset < 7 && n.attr_int("is_test", 0) == 0;
  if (n.opset >= 12) {
    if (ratio) m.ratio = ratio->item_as_double();
    if (training) m.training = training->item_as_int() != 0;
  }
  if (m.ratio < 0 || m.ratio > 1) ctx.fail(cat("ratio ", m.ratio, " is outside [0, 1]"));
  m.mask_dtype = n.opset >= 10 ? DType::Bool : ctx.input(0).dtype();
  return m;
}

// keep[i] = (u_i >= ratio) for the next `count` uniforms of g (see the top of the file).
inline void draw_dropout_keep(std::mt19937& g, double ratio, int64_t count, uint8_t* keep) {
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t a = g() >> 5, b = g() >> 6;
    const double u = (a * 67108864.0 + b) / 9007199254740992.0;
    keep[i] = u >= ratio;
  }
}

// keep[i] for the `draw`-th Philox draw of `count` elements under `key` (see the top of the file).
inline void draw_dropout_keep_philox(uint64_t key, uint64_t draw, double ratio, int64_t count,
                                     uint8_t* keep) {
  for (int64_t b = 0; b * 4 < count; ++b) {
    const Philox4 w = philox_block(key, draw, static_cast<uint64_t>(b));
    for (int64_t k = 0; k < 4 && b * 4 + k < count; ++k)
      keep[b * 4 + k] = dropout_philox_keep(w.v[k], ratio);
  }
}

}  // namespace oat::cpu
