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

Tensor& KernelContext::reuse_input(int i, int o) {
  if (!input_donated(i)) fail(cat("input ", i, " was not donated; it cannot become output ", o));
  set_output(o, input(i));
  return (*outputs_)[static_cast<size_t>(o)];
}

void KernelContext::set_output(int i, Tensor t) {
  if (i >= num_outputs()) fail(cat("kernel wrote output ", i, " but the node has ", num_outputs()));
  (*outputs_)[static_cast<size_t>(i)] = std::move(t);
}

std::unique_ptr<DeviceContext> make_device_context(Device device) {
  if (device == Device::CPU) return nullptr;
  return cuda::make_context();
}

void DeviceContext::copy_into(const Tensor&, Tensor&) {
  throw Error(cat(device_name(device()), " cannot copy into device tensors"));
}
void DeviceContext::amp_step(DeviceAmpState&, const Tensor*, const DeviceAmpRule&) {
  throw Error(cat(device_name(device()), " has no device-side loss-scale update"));
}
void DeviceContext::begin_capture() {
  throw Error(cat(device_name(device()), " cannot capture graphs"));
}
std::unique_ptr<CapturedGraph> DeviceContext::end_capture() {
  throw Error(cat(device_name(device()), " cannot capture graphs"));
}
void DeviceContext::abort_capture() {}

void KernelContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }

}  // namespace oat
