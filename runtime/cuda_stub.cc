// Without the CUDA backend the same entry points answer "not compiled".
#ifndef OAT_HAVE_CUDA
#include "runtime/cuda/device.h"

namespace oat::cuda {
bool compiled() { return false; }
int device_count() { return 0; }
std::string describe_device(int) { return "this build has no CUDA backend"; }
}  // namespace oat::cuda
#endif
