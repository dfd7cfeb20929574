// RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike without a 'seed' on CUDA: the
// Philox stream of the CPU kernels (runtime/cpu/kernels/random.cc, random_philox.h), computed on
// the device (random_impl.cu), the draw number in device memory and advanced by a kernel, so a
// training step with one (a VAE's noise) is captured as a CUDA graph and each replay draws new
// numbers. F32, F16, BF16 outputs. Seeded nodes (std::mt19937_64 from the seed), float64 outputs,
// Bernoulli and Multinomial run the CPU kernel on the host (CudaContext::placement), which a
// capture refuses.
#include "runtime/cpu/kernels/random_philox.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/draw_counter.h"
#include "runtime/cuda/kernels/random_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class RandomPhiloxKernel : public OpKernel {
 public:
  explicit RandomPhiloxKernel(const Node& n)
      : p_(cpu::random_float_params(n)), key_(cpu::random_philox_key(n)) {
    if (!cpu::random_uses_philox(n))
      throw Error(cat(n.describe(), ": a seeded generator runs on the host (CudaContext)"));
  }

  void compute(KernelContext& ctx) override {
    const auto [dt, shape] = cpu::random_float_output(ctx, p_);
    if (dt != DType::F32 && dt != DType::F16 && dt != DType::BF16)
      ctx.fail(cat("a ", dtype_name(dt), " output has no CUDA kernel (F32, F16, BF16)"));
    Tensor& y = ctx.allocate_output(0, dt, shape);
    if (y.numel() == 0) return;
    const float top = p_.normal ? 0.f : static_cast<float>(cpu::random_uniform_top(dt, p_.b));
    launch_random_philox(elem_type(dt), p_.normal, key_, draws_.get(ctx), p_.a, p_.b, top,
                         y.raw_data(), y.numel(), stream_of(ctx));
  }

 private:
  cpu::RandomFloatParams p_;
  uint64_t key_;
  DeviceDrawCounter draws_;  // Philox draws so far, on the device
};

}  // namespace

void register_random(KernelRegistry& r) {
  // No float input decides the dtype (RandomNormal has none; the *Like ops read only the shape).
  for (OpId op : {OpId::RandomNormal, OpId::RandomUniform, OpId::RandomNormalLike,
                  OpId::RandomUniformLike})
    r.add(op, Device::CUDA, kAnyDType, kernel_factory<RandomPhiloxKernel>());
}

}  // namespace oat::cuda
