#include "runtime/cuda/check.h"

#include "runtime/error.h"

namespace oat::cuda {

void throw_call_error(const char* call, const char* file, int line, const char* what) {
  throw Error(cat(call, " failed at ", file, ":", line, ": ", what));
}

const char* cublas_status_name(cublasStatus_t s) { return cublasGetStatusString(s); }

}  // namespace oat::cuda
