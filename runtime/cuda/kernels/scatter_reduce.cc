// ScatterReduce on CUDA (internal domain; ScatterElements' and ScatterND's mul, max and min), as
// runtime/cpu/kernels/scatter_reduce.cc:
//   Y = data;  Y[p with idx[p] on axis] = f(Y[..], U[p])  for every position p of U
//   mul f = y·u;  max f = (u > y or u NaN) ? u : y;  min f = (u < y or u NaN) ? u : y
// in an FP32 accumulator (Y itself for F32; F16/BF16 are widened, then rounded once), one thread
// per update with a compare-and-swap loop (movement_impl.cu). max and min give the CPU's result
// bit for bit; mul's order of products differs between runs in the last bits. The indices are
// read and checked on the host (context.cc reads_on_host).
#include <cstdint>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/movement_impl.h"
#include "runtime/cuda/kernels/slice_view.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

int reduction_code(const KernelContext& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "");
  if (r == "mul") return 0;
  if (r == "max") return 1;
  if (r == "min") return 2;
  ctx.fail(cat("reduction '", r, "' must be mul, max or min"));
}

void scatter_reduce(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const int op = reduction_code(ctx);
  if (upd.shape() != idx.shape())
    ctx.fail(cat("updates ", shape_str(upd.shape()), " must have the shape of the indices ",
                 shape_str(idx.shape())));
  if (upd.dtype() != data.dtype())
    ctx.fail(cat("updates are ", dtype_name(upd.dtype()), ", data is ", dtype_name(data.dtype())));
  const GatherElementsPlan plan =
      gather_elements_plan(ctx, data.shape(), idx, ctx.node().attr_int("axis", 0));
  CudaContext& cc = cuda_context(ctx);
  Tensor& y = ctx.allocate_output(0, data.dtype(), data.shape());
  if (y.numel() == 0) return;
  const bool f32 = data.dtype() == DType::F32;
  Tensor acc = f32 ? y : Tensor(DType::F32, data.shape(), Device::CUDA);
  if (f32)
    CUDA_CHECK(cudaMemcpyAsync(acc.raw_data(), data.raw_data(), data.nbytes(),
                               cudaMemcpyDeviceToDevice, cc.stream()));
  else
    launch_cast(elem_type(data.dtype()), ElemType::F32, data.raw_data(), acc.raw_data(),
                acc.numel(), cc.stream());
  if (upd.numel() > 0) {
    const Tensor dev_idx = idx.device() == Device::CPU ? cc.upload(idx) : idx;
    launch_scatter_reduce(elem_type(upd.dtype()), upd.raw_data(), dev_idx.raw_data(),
                          idx.dtype() == DType::I64, acc.data<float>(), upd.numel(), op, plan,
                          cc.stream());
  }
  if (!f32)
    launch_cast(ElemType::F32, elem_type(data.dtype()), acc.raw_data(), y.raw_data(), y.numel(),
                cc.stream());
}

}  // namespace

void register_scatter_reduce(KernelRegistry& r) {
  add_floats(r, OpId::ScatterReduce, function_kernel(scatter_reduce));
}

}  // namespace oat::cuda
