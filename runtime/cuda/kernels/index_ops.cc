// MaxUnpool and BitShift on CUDA (index_ops_impl.cu), with the CPU kernels' checks and formulas
// (runtime/cpu/kernels/max_unpool.cc, bitshift.cc).
//   MaxUnpool: Y zeroed, then Y.flat[I.flat[j]] = X.flat[j], every dtype (bytes). I is checked on
//   the host when it is there (reads_on_host: constants and feeds, then uploaded), by a device
//   flag (one synchronisation) when it was computed on the device (MaxPool's Indices);
//   output_shape is read on the host.
//   BitShift: uint8, numpy broadcasting.
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/bitshift_args.h"
#include "runtime/cpu/kernels/max_unpool_args.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/index_ops_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class MaxUnpoolKernel : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const Node& n) : attrs_(n) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    Tensor given;
    if (ctx.has_input(2)) given = host_input(ctx, 2);
    const Shape ys = attrs_.output_shape(ctx, x, idx, ctx.has_input(2) ? &given : nullptr);
    CudaContext& cc = cuda_context(ctx);
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
    const int64_t n = y.numel();
    Tensor dev_idx = idx, flag;
    if (idx.device() == Device::CPU) {
      const int64_t* ip = idx.data<int64_t>();
      for (int64_t j = 0; j < idx.numel(); ++j)
        if (ip[j] < 0 || ip[j] >= n)
          ctx.fail(cat("I[", j, "] = ", ip[j], " is out of range for the output ",
                       shape_str(ys)));
      dev_idx = cc.upload(idx);
    } else {
      flag = Tensor(DType::I32, {}, Device::CUDA);
      CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0, sizeof(int32_t), cc.stream()));
    }
    if (y.nbytes()) CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), cc.stream()));
    launch_max_unpool(static_cast<int>(dtype_size(x.dtype())), x.raw_data(),
                      dev_idx.data<int64_t>(), y.raw_data(), x.numel(), n,
                      flag.defined() ? flag.data<int32_t>() : nullptr, cc.stream());
    if (flag.defined() && cc.download(flag).item_as_int() != 0)
      ctx.fail(cat("an index of I is out of range for the output ", shape_str(ys)));
  }

 private:
  cpu::MaxUnpoolAttrs attrs_;
};

class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const Node& n) : left_(cpu::bitshift_left(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    const Shape out = cpu::bitshift_output_shape(ctx, x, y);
    Tensor& z = ctx.allocate_output(0, DType::U8, out);
    launch_bitshift(left_, x.data<uint8_t>(), y.data<uint8_t>(), z.data<uint8_t>(), z.numel(),
                    make_broadcast_index(out, {x.shape(), y.shape()}), stream_of(ctx));
  }

 private:
  bool left_ = true;
};

}  // namespace

void register_index_ops(KernelRegistry& r) {
  r.add(OpId::MaxUnpool, Device::CUDA, kAnyDType, kernel_factory<MaxUnpoolKernel>());
  r.add(OpId::BitShift, Device::CUDA, DType::U8, kernel_factory<BitShiftKernel>());
}

}  // namespace oat::cuda
