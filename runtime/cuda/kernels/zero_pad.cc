#include "runtime/cuda/kernels/zero_pad.h"

#include "runtime/cpu/kernels/pad_geometry.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/movement_impl.h"

namespace oat::cuda {

void zero_pad_into(KernelContext& ctx, const Tensor& x, Tensor& y,
                   const std::vector<int64_t>& begin) {
  pad_into(ctx, x, y, begin, cpu::PadMode::Constant, 0);
}

void pad_into(KernelContext& ctx, const Tensor& x, Tensor& y, const std::vector<int64_t>& begin,
              cpu::PadMode mode, uint64_t fill) {
  const int r = x.rank();
  if (y.rank() != r || static_cast<int>(begin.size()) != r || y.dtype() != x.dtype())
    ctx.fail(cat("pad_into: ", shape_str(x.shape()), " into ", shape_str(y.shape())));
  if (y.numel() == 0) return;
  CudaContext& cc = cuda_context(ctx);
  if (r == 0) {
    CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice,
                               cc.stream()));
    return;
  }
  PadPlan plan;
  plan.rank = r;
  std::vector<int64_t> maps;
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    plan.in_strides[d] = stride;
    stride *= x.dim(d);
  }
  for (int d = 0; d < r; ++d) {
    plan.out_dims[d] = y.dim(d);
    plan.map_offset[d] = static_cast<int64_t>(maps.size());
    const std::vector<int64_t> m =
        cpu::pad_axis_map(mode, y.dim(d), x.dim(d), begin[static_cast<size_t>(d)]);
    maps.insert(maps.end(), m.begin(), m.end());
  }
  const Tensor dev_maps =
      cc.upload(Tensor::from_vector<int64_t>({static_cast<int64_t>(maps.size())}, maps));
  launch_pad(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), y.raw_data(), y.numel(),
             dev_maps.data<int64_t>(), plan, fill, cc.stream());
}

}  // namespace oat::cuda
