// MatMul's shape rule (numpy.matmul), shared by MatMul (matmul.cc) and MatMulGrad
// (grad_matmul.cc): a 1-D A is [1, K] and a 1-D B is [K, 1], the added 1 removed from the result;
// A [..a, M, K] x B [..b, K, N] -> [broadcast(..a, ..b), M, N].
#pragma once

#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/error.h"
#include "runtime/kernel.h"

namespace oat::cpu {

struct MatMulShape {
  bool a_vec = false, b_vec = false;
  int64_t M = 0, K = 0, N = 0;
  Shape batch_a, batch_b;  // the operands' own batch dims
  Shape batch;             // their broadcast
  Shape out;               // the product's shape
};

// Fails naming the shapes when an operand is a scalar, the inner dimensions differ or the batch
// dimensions do not broadcast.
inline MatMulShape matmul_shape(const KernelContext& ctx, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    ctx.fail(cat("MatMul needs operands of rank >= 1, got ", shape_str(a), " x ", shape_str(b)));
  MatMulShape s;
  s.a_vec = a.size() == 1;
  s.b_vec = b.size() == 1;
  const Shape sa = s.a_vec ? Shape{1, a[0]} : a;
  const Shape sb = s.b_vec ? Shape{b[0], 1} : b;
  s.M = sa[sa.size() - 2];
  s.K = sa.back();
  s.N = sb.back();
  if (sb[sb.size() - 2] != s.K)
    ctx.fail(cat("inner dimensions differ: ", shape_str(a), " x ", shape_str(b)));
  s.batch_a.assign(sa.begin(), sa.end() - 2);
  s.batch_b.assign(sb.begin(), sb.end() - 2);
  try {
    s.batch = broadcast_shapes({s.batch_a, s.batch_b});
  } catch (const Error&) {
    ctx.fail(cat("batch dimensions do not broadcast: ", shape_str(a), " x ", shape_str(b)));
  }
  s.out = s.batch;
  if (!s.a_vec) s.out.push_back(s.M);
  if (!s.b_vec) s.out.push_back(s.N);
  return s;
}

// Matrix offsets (in matrices, not elements) of each entry of `batch`, in row-major order, in an
// operand whose own batch dims `own` broadcast to it.
inline std::vector<int64_t> batch_offsets(const Shape& own, const Shape& batch) {
  const int64_t nb = numel(batch);
  std::vector<int64_t> off(static_cast<size_t>(nb));
  const auto st = broadcast_strides(own, batch);
  Shape idx(batch.size(), 0);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < batch.size(); ++d) o += idx[d] * st[d];
    off[static_cast<size_t>(i)] = o;
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return off;
}

}  // namespace oat::cpu
