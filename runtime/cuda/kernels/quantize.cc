// The quantization ops on CUDA. Formulas: runtime/cpu/kernels/quantize.cc (round half to even,
// saturation; layout of scale / zero_point in runtime/cpu/kernels/quantize_args.h).
//
// Device kernels (quantize_impl.cu), float arithmetic in FP32, F32/F16/BF16 storage:
//   QuantizeLinear(x, s, [zp]):      y = saturate(rint(x / s) + zp)   (x float; int32 x: CPU only)
//   DequantizeLinear(x, s, [zp]):    y = (x − zp) · s                 (x uint8, int8, int32)
//   QuantizeLinearGrad(dY, X, s, [zp]): dX = dY where qmin <= rint(X / s) + zp <= qmax, else 0
// scale and zero_point are read on the device (uploaded like any input), per tensor or per axis.
//
// Host kernels: DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv
// are integer inference ops that no training graph reaches. Their CUDA registration runs the CPU
// kernel explicitly: each input is downloaded (host_input: a synchronisation, refused inside a
// CUDA graph capture, naming the node), the CPU kernel computes, and each output is uploaded.
// Nothing falls back silently: the registry lists them under CUDA as these host kernels, and
// runtime/cuda/README.md says so. (When all their inputs are already on the host, the executor's
// placement runs the CPU kernel directly, as for any integer op.)
#include <memory>

#include "runtime/cpu/kernels/quantize_args.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/quantize_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

QuantArgs quant_args(const KernelContext& ctx, const Shape& x, const Tensor& scale,
                     const Tensor* zp) {
  const cpu::QuantLayout l = cpu::quant_layout(ctx, x, scale, zp);
  QuantArgs a;
  a.n = numel(x);
  a.channels = l.channels;
  a.inner = l.inner;
  a.scale_type = elem_type(scale.dtype());
  a.scale = scale.raw_data();
  a.zero_point = zp ? zp->raw_data() : nullptr;
  a.zp_signed = zp && zp->dtype() == DType::I8;
  return a;
}

void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.input_or_null(2);
  const QuantArgs a = quant_args(ctx, x.shape(), scale, zp);  // the CPU's checks, in its order
  const DType qt = zp ? zp->dtype() : DType::U8;
  cpu::quant_range(ctx, qt, "y_zero_point");
  Tensor& y = ctx.allocate_output(0, qt, x.shape());
  launch_quantize_linear(elem_type(x.dtype()), x.raw_data(), y.raw_data(), a, stream_of(ctx));
}

void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.input_or_null(2);
  if (zp && zp->dtype() != x.dtype())
    ctx.fail(cat("x_zero_point has dtype ", dtype_name(zp->dtype()), ", expected ",
                 dtype_name(x.dtype()), " (the quantized input's type)"));
  const QuantArgs a = quant_args(ctx, x.shape(), scale, zp);
  Tensor& y = ctx.allocate_output(0, scale.dtype(), x.shape());
  launch_dequantize_linear(elem_type(x.dtype()), x.raw_data(), y.raw_data(), a, stream_of(ctx));
}

void quantize_linear_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  const Tensor* zp = ctx.input_or_null(3);
  if (dy.shape() != x.shape())
    ctx.fail(cat("dY ", shape_str(dy.shape()), " and X ", shape_str(x.shape()), " must match"));
  const QuantArgs a = quant_args(ctx, x.shape(), scale, zp);
  cpu::quant_range(ctx, zp ? zp->dtype() : DType::U8, "zero_point");
  if (dy.dtype() != x.dtype())  // the CPU reads any float X; the device kernel one type
    ctx.fail(cat("dY is ", dtype_name(dy.dtype()), " but X is ", dtype_name(x.dtype()),
                 ": the CUDA kernel needs one float type"));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  launch_quantize_linear_grad(elem_type(dy.dtype()), dy.raw_data(), x.raw_data(), dx.raw_data(),
                              a, stream_of(ctx));
}

// The CPU kernel of the node on host copies of its inputs; outputs uploaded (see the top).
class HostKernel : public OpKernel {
 public:
  explicit HostKernel(const Node& n) : node_(n) {}

  void compute(KernelContext& ctx) override {
    std::vector<Tensor> host(static_cast<size_t>(ctx.num_inputs()));
    std::vector<const Tensor*> ptrs;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) {
        ptrs.push_back(nullptr);
        continue;
      }
      host[static_cast<size_t>(i)] = host_input(ctx, i);
      ptrs.push_back(&host[static_cast<size_t>(i)]);
    }
    const DType key = kernel_dtype_key(node_, ptrs);
    if (!cpu_ || key != key_) {
      cpu_ = default_registry().create(node_, Device::CPU, key);
      key_ = key;
    }
    std::vector<Tensor> outs(static_cast<size_t>(ctx.num_outputs()));
    KernelContext hctx(node_, ptrs, &outs, Device::CPU);
    cpu_->compute(hctx);
    CudaContext& cc = cuda_context(ctx);
    for (int o = 0; o < ctx.num_outputs(); ++o)
      if (outs[static_cast<size_t>(o)].defined())
        ctx.set_output(o, cc.upload(outs[static_cast<size_t>(o)]));
  }

 private:
  Node node_;  // a copy: the CPU kernel and its context refer to it
  std::unique_ptr<OpKernel> cpu_;
  DType key_ = DType::Undefined;
};

}  // namespace

void register_quantize(KernelRegistry& r) {
  add_floats(r, OpId::QuantizeLinear, function_kernel(quantize_linear));
  r.add(OpId::DequantizeLinear, Device::CUDA, {DType::U8, DType::I8, DType::I32},
        function_kernel(dequantize_linear));
  add_floats(r, OpId::QuantizeLinearGrad, function_kernel(quantize_linear_grad));
  add_floats(r, OpId::DynamicQuantizeLinear, kernel_factory<HostKernel>());
  for (OpId op : {OpId::MatMulInteger, OpId::ConvInteger, OpId::QLinearMatMul, OpId::QLinearConv})
    r.add(op, Device::CUDA, {DType::U8, DType::I8}, kernel_factory<HostKernel>());
}

}  // namespace oat::cuda
