// TopK on CUDA (topk_impl.cu): the operand rules and messages of the CPU kernel
// (runtime/cpu/kernels/topk_args.h), K read on the host (reads_on_host), F32/F16/BF16.
// Same order as runtime/cpu/kernels/topk.cc: by value, equal values by the lower index, NaN above
// every number, -0 equal to +0; sorted = 0 still returns the sorted order. Each lane is fully
// sorted (CUB's stable segmented radix sort on the widened float's order-preserving bits), then
// its first k elements are copied out; the values are X's own elements, so every dtype is exact.
#include <limits>

#include "runtime/cpu/kernels/topk_args.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/topk_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

void topk(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor k;
  if (ctx.node().opset >= 10 && ctx.has_input(1)) k = host_input(ctx, 1);
  const cpu::TopKArgs a = cpu::topk_args(ctx, x.shape(), k.defined() ? &k : nullptr);
  Tensor& values = ctx.allocate_output(0, x.dtype(), a.out_shape);
  Tensor unnamed;  // Indices when the node lists only Values (ONNX requires both)
  Tensor& indices = ctx.num_outputs() > 1
                        ? ctx.allocate_output(1, DType::I64, a.out_shape)
                        : (unnamed = Tensor(DType::I64, a.out_shape, Device::CUDA));
  const int64_t lanes = a.outer * a.inner;
  if (lanes == 0 || a.k == 0) return;
  if (x.numel() > std::numeric_limits<int32_t>::max())
    ctx.fail(cat("input ", shape_str(x.shape()), " has ", x.numel(),
                 " elements; the CUDA TopK sorts at most 2^31 - 1"));
  CudaContext& cc = cuda_context(ctx);
  const size_t bytes = topk_scratch_bytes(lanes, a.len);
  Tensor scratch = cc.scratch(bytes);
  launch_topk(elem_type(x.dtype()), x.raw_data(), values.raw_data(), indices.data<int64_t>(),
              a.outer, a.len, a.inner, a.k, a.largest, scratch.raw_data(), bytes, cc.stream());
}

}  // namespace

void register_topk(KernelRegistry& r) { add_floats(r, OpId::TopK, function_kernel(topk)); }

}  // namespace oat::cuda
