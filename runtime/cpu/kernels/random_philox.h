// The Philox stream of unseeded RandomNormal, RandomUniform, RandomNormalLike and
// RandomUniformLike nodes (random.cc; formulas in philox.h), shared by the CPU kernels and the
// CUDA ones (runtime/cuda/kernels/random.cc), which compute it on the device.
#pragma once

#include <cstdint>
#include <utility>

#include "runtime/dtype.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"

namespace oat::cpu {

// Whether a float generator node draws the Philox stream: it has no 'seed' attribute (a seeded
// node draws std::mt19937_64 from its seed, reproducible from process to process).
inline bool random_uses_philox(const Node& n) { return !n.has_attr("seed"); }

// Its key: the process seed (OAT_RANDOM_SEED, else one std::random_device draw) mixed with a hash
// of the node's name and first output, so distinct nodes draw distinct streams, and one node draws
// the same stream in every executor of the process (so the CPU and CUDA executors agree).
uint64_t random_philox_key(const Node& n);

// A float generator's parameters: normal (mean a, scale b) or uniform (low a, high b), from the
// node's attributes; `shape` from the 'shape' attribute unless it is a *Like op (checked: given,
// no negative dimension).
struct RandomFloatParams {
  bool normal = false, like = false;
  double a = 0, b = 1;
  Shape shape;
};
RandomFloatParams random_float_params(const Node& n);

// The output dtype of a float generator node: its 'dtype' attribute (1 float, 10 float16, 11
// double, 16 bfloat16), else `like` (the *Like input's dtype), else float32 when `like` is
// Undefined. Throws Unsupported naming the node for another code; does not check that `like` is
// a float type (random_float_output does).
DType random_float_dtype(const Node& n, DType like);

// The output's dtype and shape for a run: the 'dtype' attribute (1 float, 10 float16, 11 double,
// 16 bfloat16), else the *Like input's dtype (a float type) or float32; the *Like input's shape,
// else params.shape. Fails naming the node on a bad dtype or low >= high.
std::pair<DType, Shape> random_float_output(const KernelContext& ctx,
                                            const RandomFloatParams& params);

// The largest value of `dt` (F32, F16, BF16 or F64) strictly below `high`, as a double: where a
// uniform draw that rounding carries to `high` or past it is put.
double random_uniform_top(DType dt, double high);

}  // namespace oat::cpu
