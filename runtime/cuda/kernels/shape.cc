// Shape kernels on CUDA. Reshape, Flatten, Squeeze and Unsqueeze only re-label X's storage, so
// the CPU kernels run unchanged on the device tensor (their shape/axes inputs are read on the
// host); Shape and Size read metadata and return host I64 tensors, so the shape arithmetic that
// follows runs on the host (CudaContext::placement). Identity shares storage. (Dropout is
// in dropout.cc.)
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

// Runs the node's CPU kernel with host inputs except X (input 0), in a context whose allocations
// are host tensors: correct for kernels that never read X's elements.
class MetadataKernel : public OpKernel {
 public:
  explicit MetadataKernel(const Node& n)
      : cpu_(default_registry().create(n, Device::CPU, kAnyDType)) {}

  void compute(KernelContext& ctx) override {
    std::vector<Tensor> host(static_cast<size_t>(ctx.num_inputs()));
    std::vector<const Tensor*> in;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) {
        in.push_back(nullptr);
      } else if (i == 0) {
        in.push_back(&ctx.input(0));
      } else {
        host[i] = host_input(ctx, i);
        in.push_back(&host[i]);
      }
    }
    std::vector<Tensor> outs(static_cast<size_t>(ctx.num_outputs()));
    KernelContext inner(ctx.node(), in, &outs, Device::CPU, nullptr);
    cpu_->compute(inner);
    for (int o = 0; o < ctx.num_outputs(); ++o)
      if (outs[o].defined()) ctx.set_output(o, std::move(outs[o]));
  }

 private:
  std::unique_ptr<OpKernel> cpu_;
};

void identity(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }

}  // namespace

void register_shape(KernelRegistry& r) {
  for (OpId op : {OpId::Reshape, OpId::Flatten, OpId::Squeeze, OpId::Unsqueeze, OpId::Shape,
                  OpId::Size})
    r.add(op, Device::CUDA, kAnyDType, kernel_factory<MetadataKernel>());
  r.add(OpId::Identity, Device::CUDA, kAnyDType, function_kernel(identity));
}

}  // namespace oat::cuda
