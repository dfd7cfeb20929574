// MaxUnpool and BitShift on CUDA (index_ops_impl.cu), with the CPU kernels' checks and formulas
// (runtime/cpu/kernels/max_unpool.cc, bitshift.cc).
//   MaxUnpool: Y zeroed, then Y.flat[I.flat[j]] = X.flat[j], every dtype (bytes). I is checked on
//   the host when it is there (reads_on_host: constants and feeds, then uploaded), by a device
//   flag (one synchronisation) when it was computed on the device (MaxPool's Indices);
//   output_shape is read on the host.
//   BitShift: uint8, numpy broadcasting.
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/index_ops_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class MaxUnpoolKernel : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const Node& n)
      : kernel_(n.attr_ints("kernel_shape")), strides_(n.attr_ints("strides")),
        pads_(n.attr_ints("pads")) {
    if (kernel_.empty()) throw Error(cat(n.describe(), ": attribute kernel_shape is required"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    const int64_t k = static_cast<int64_t>(kernel_.size());
    if (x.rank() != k + 2)
      ctx.fail(cat("X must be [N, C] plus ", k, " spatial dims (kernel_shape has ", k,
                   "), got ", shape_str(x.shape())));
    if (idx.dtype() != DType::I64) ctx.fail(cat("I must be int64, got ", dtype_name(idx.dtype())));
    if (idx.shape() != x.shape())
      ctx.fail(cat("I must have X's shape ", shape_str(x.shape()), ", got ",
                   shape_str(idx.shape())));
    if (!strides_.empty() && static_cast<int64_t>(strides_.size()) != k)
      ctx.fail(cat("strides must have ", k, " values, got ", strides_.size()));
    if (!pads_.empty() && static_cast<int64_t>(pads_.size()) != 2 * k)
      ctx.fail(cat("pads must have ", 2 * k, " values, got ", pads_.size()));
    Shape ys;
    if (ctx.has_input(2)) {
      const Tensor os = host_input(ctx, 2);
      if (os.dtype() != DType::I64 || os.rank() != 1 || os.numel() != x.rank())
        ctx.fail(cat("output_shape must be int64 [", x.rank(), "], got ", dtype_name(os.dtype()),
                     " ", shape_str(os.shape())));
      ys = os.to_int_vector();
      for (int64_t d : ys)
        if (d < 0) ctx.fail(cat("output_shape must not be negative, got ", shape_str(ys)));
    } else {
      ys = {x.dim(0), x.dim(1)};
      for (int64_t i = 0; i < k; ++i) {
        const int64_t s = strides_.empty() ? 1 : strides_[i];
        const int64_t pb = pads_.empty() ? 0 : pads_[i], pe = pads_.empty() ? 0 : pads_[k + i];
        ys.push_back((x.dim(static_cast<int>(i + 2)) - 1) * s + kernel_[i] - pb - pe);
      }
    }
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
  std::vector<int64_t> kernel_, strides_, pads_;
};

class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const Node& n) {
    const std::string d = n.attr_string("direction", "");
    if (d != "LEFT" && d != "RIGHT")
      throw Error(cat(n.describe(), ": direction must be \"LEFT\" or \"RIGHT\", got \"", d, "\""));
    left_ = d == "LEFT";
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (x.dtype() != DType::U8 || y.dtype() != DType::U8)
      ctx.fail(cat("X and Y must be uint8 (the unsigned type this runtime stores), got ",
                   dtype_name(x.dtype()), " and ", dtype_name(y.dtype())));
    Shape out;
    try {
      out = cpu::broadcast_shapes({x.shape(), y.shape()});
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
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
