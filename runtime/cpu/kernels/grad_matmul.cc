// TODO(training issue): kernels of this family are being written; nothing is registered yet.
#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_grad_matmul(KernelRegistry& /*r*/) {}

}  // namespace oat::cpu
