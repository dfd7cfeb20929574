// Without the CUDA backend the same entry points answer "not compiled".
#ifndef OAT_HAVE_CUDA
#include "runtime/cuda/device.h"
#include "runtime/kernel.h"

namespace oat::cuda {

namespace {
[[noreturn]] void no_backend() {
  throw Error("no CUDA device: this build has no CUDA backend (configure with nvcc to add it)");
}
}  // namespace

bool compiled() { return false; }
int device_count() { return 0; }
std::string describe_device(int) { return "this build has no CUDA backend"; }
void require_device() { no_backend(); }
std::shared_ptr<Storage> allocate_storage(size_t) { no_backend(); }
void copy_bytes(void*, bool, const void*, bool, size_t) { no_backend(); }
std::unique_ptr<DeviceContext> make_context() { no_backend(); }
void register_kernels(KernelRegistry&) {}

}  // namespace oat::cuda
#endif
