// CUDA backend entry points. The full backend (kernels, cuBLAS, cuDNN) arrives with the CUDA
// issue; this file is the seam the rest of the code already calls.
#pragma once

#include <string>

namespace oat::cuda {

// True when this build has the CUDA backend compiled in.
bool compiled();
// Number of CUDA devices that answer (0 without a driver or GPU, never throws).
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" or the reason there is none.
std::string describe_device(int index = 0);

}  // namespace oat::cuda
