#include "runtime/cuda/kernels/conv_bias.h"

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"

namespace oat::cuda {

void add_channel_bias(const KernelContext& ctx, const Tensor& b, Tensor& y) {
  if (y.numel() == 0) return;
  // B as [M, 1, ..., 1] broadcasts against Y's trailing dims [M, spatial...]. In place: element
  // i of the output reads only element i of Y.
  Shape bshape(static_cast<size_t>(y.rank() - 1), 1);
  bshape[0] = y.dim(1);
  launch_binary(BinaryOp::Add, elem_type(y.dtype()), y.raw_data(), b.raw_data(), y.raw_data(),
                y.numel(), make_broadcast_index(y.shape(), {y.shape(), bshape}), stream_of(ctx));
}

void channel_bias_grad(const KernelContext& ctx, const Tensor& dy, Tensor& db) {
  if (db.numel() == 0) return;
  if (dy.numel() == 0) {  // no images or no positions: the empty sum
    CUDA_CHECK(cudaMemsetAsync(db.raw_data(), 0, db.nbytes(), stream_of(ctx)));
    return;
  }
  // dY viewed as [N, M, S], reduced over N and S.
  const int64_t N = dy.dim(0), M = dy.dim(1), S = dy.numel() / (N * M);
  ReducePlan p;
  p.kept_rank = 1;
  p.kept_dims[0] = M;
  p.kept_strides[0] = S;
  p.red_rank = 2;
  p.red_dims[0] = N;
  p.red_strides[0] = M * S;
  p.red_dims[1] = S;
  p.red_strides[1] = 1;
  p.outputs = M;
  p.count = N * S;
  launch_reduce(ReduceOp::Sum, elem_type(dy.dtype()), elem_type(db.dtype()), dy.raw_data(),
                db.raw_data(), p, stream_of(ctx));
}

}  // namespace oat::cuda
