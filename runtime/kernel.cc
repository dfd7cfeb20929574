#include "runtime/kernel.h"

#include "runtime/cuda/device.h"

namespace oat {

const Tensor& KernelContext::input(int i) const {
  const Tensor* t = input_or_null(i);
  if (!t) fail(cat("required input ", i, " is missing"));
  return *t;
}

Tensor& KernelContext::allocate_output(int i, DType dtype, Shape shape) {
  if (i >= num_outputs()) fail(cat("kernel wrote output ", i, " but the node has ", num_outputs()));
  (*outputs_)[static_cast<size_t>(i)] = Tensor(dtype, std::move(shape), device_);
  return (*outputs_)[static_cast<size_t>(i)];
}

void KernelContext::set_output(int i, Tensor t) {
  if (i >= num_outputs()) fail(cat("kernel wrote output ", i, " but the node has ", num_outputs()));
  (*outputs_)[static_cast<size_t>(i)] = std::move(t);
}

std::unique_ptr<DeviceContext> make_device_context(Device device) {
  if (device == Device::CPU) return nullptr;
  return cuda::make_context();
}

void KernelContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }

}  // namespace oat
