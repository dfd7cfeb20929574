// The FP32-compute wrapper of low_precision.h: F16/BF16 inputs widened, the FP32 kernel run,
// float outputs rounded once.
#include "runtime/cpu/kernels/low_precision.h"

#include <algorithm>

#include "runtime/cpu/kernels/movement.h"
#include "runtime/grad_type.h"

namespace oat::cpu {

namespace {

// Above this many elements a conversion is split over threads (bytes moved ~ 6 per element).
constexpr int64_t kParallelConvert = kParallelBytes / 4;

template <class S>
void widen_into(const Tensor& t, Tensor& out) {
  const S* src = t.data<S>();
  float* dst = out.data<float>();
  const int64_t n = t.numel();
  parallel_chunks((n + 63) / 64, n >= kParallelConvert, [&](int64_t b, int64_t e) {
    const int64_t lo = b * 64, hi = std::min(n, e * 64);
    widen_to_float(src + lo, dst + lo, hi - lo);
  });
}

template <class S>
void round_into(const Tensor& t, Tensor& out) {
  const float* src = t.data<float>();
  S* dst = out.data<S>();
  const int64_t n = t.numel();
  parallel_chunks((n + 63) / 64, n >= kParallelConvert, [&](int64_t b, int64_t e) {
    const int64_t lo = b * 64, hi = std::min(n, e * 64);
    round_from_float(src + lo, dst + lo, hi - lo);
  });
}

class Fp32ComputeKernel : public OpKernel {
 public:
  Fp32ComputeKernel(const Node& node, const KernelFactory& f32, Fp32Io io)
      : inner_(f32(node)), io_(io) {}

  void compute(KernelContext& ctx) override {
    const int n_in = ctx.num_inputs();
    // The storage type: the dtype of the F16/BF16 inputs (all the same).
    DType low = DType::Undefined;
    int low_at = -1;
    for (int i = 0; i < n_in; ++i) {
      const Tensor* t = ctx.input_or_null(i);
      if (!t || !is_low_float(t->dtype())) continue;
      if (low == DType::Undefined) {
        low = t->dtype();
        low_at = i;
      } else if (t->dtype() != low) {
        ctx.fail(cat("input ", i, " has dtype ", dtype_name(t->dtype()), " but input ", low_at,
                     " has ", dtype_name(low)));
      }
    }
    if (low == DType::Undefined)
      ctx.fail("the float16/bfloat16 kernel got no float16/bfloat16 input");

    std::vector<Tensor> widened(static_cast<size_t>(n_in));
    std::vector<const Tensor*> ins(static_cast<size_t>(n_in), nullptr);
    for (int i = 0; i < n_in; ++i) {
      const Tensor* t = ctx.input_or_null(i);
      if (!t) continue;
      if (t->dtype() == low) {
        widened[i] = widen_tensor(*t);
        ins[i] = &widened[i];
      } else if (is_floating(t->dtype()) && !(io_.input(i) && t->dtype() == DType::F32)) {
        ctx.fail(cat("input ", i, " has dtype ", dtype_name(t->dtype()), " ", shape_str(t->shape()),
                     ", expected ", dtype_name(low), io_.input(i) ? " or float32" : "",
                     " like input ", low_at));
      } else {
        ins[i] = t;  // integer/bool inputs (indices, shapes, masks) and FP32 statistics
      }
    }

    std::vector<Tensor> outs(static_cast<size_t>(ctx.num_outputs()));
    KernelContext inner(ctx.node(), std::move(ins), &outs, Device::CPU);
    inner_->compute(inner);
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      Tensor& t = outs[static_cast<size_t>(o)];
      if (!t.defined()) continue;
      if (t.dtype() == DType::F32 && !io_.output(o))
        ctx.set_output(o, round_tensor(t, low));
      else
        ctx.set_output(o, std::move(t));
    }
  }

 private:
  std::unique_ptr<OpKernel> inner_;
  Fp32Io io_;
};

}  // namespace

Tensor widen_tensor(const Tensor& t) {
  Tensor out(DType::F32, t.shape());
  if (t.dtype() == DType::F16)
    widen_into<Eigen::half>(t, out);
  else if (t.dtype() == DType::BF16)
    widen_into<Eigen::bfloat16>(t, out);
  else
    throw Error(cat("widen_tensor: expected float16 or bfloat16, got ", dtype_name(t.dtype())));
  return out;
}

Tensor round_tensor(const Tensor& t, DType low) {
  if (t.dtype() != DType::F32)
    throw Error(cat("round_tensor: expected float32, got ", dtype_name(t.dtype())));
  Tensor out(low, t.shape());
  if (low == DType::F16)
    round_into<Eigen::half>(t, out);
  else if (low == DType::BF16)
    round_into<Eigen::bfloat16>(t, out);
  else
    throw Error(cat("round_tensor: expected float16 or bfloat16 target, got ", dtype_name(low)));
  return out;
}

KernelFactory in_fp32(KernelFactory f32, Fp32Io io) {
  return [f32 = std::move(f32), io](const Node& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<Fp32ComputeKernel>(node, f32, io);
  };
}

KernelFactory in_fp32(KernelFactory f32, Fp32Io (*io_of)(const Node&)) {
  return [f32 = std::move(f32), io_of](const Node& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<Fp32ComputeKernel>(node, f32, io_of(node));
  };
}

void check_weight_grad_type(const Node& n, DType operands) {
  if (weight_grads_in_fp32(n) && operands != DType::F32 && !is_low_float(operands))
    throw Error(cat(n.describe(), ": grad_type 1 (float32 weight gradients) needs float32, float16 "
                    "or bfloat16 operands, not ", dtype_name(operands)));
}

Fp32Io weight_grad_io(const Node& n) {
  Fp32Io io;
  if (!weight_grads_in_fp32(n)) return io;
  for (size_t k = 1; k < 32 && is_weight_grad_output(n, k); ++k) io.outputs |= 1u << k;
  return io;
}

}  // namespace oat::cpu
