// TODO(foundation): kernels of this family are being written; nothing is registered yet.
#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_reduce(KernelRegistry& /*r*/) {}

}  // namespace oat::cpu
