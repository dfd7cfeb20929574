// cuDNN emulator: the two tensor ops of the legacy API the backend may use.
//   cudnnAddTensor:               C = α·A + β·C, A broadcast along every dim where it is 1
//                                 (each of A's dims is C's or 1; same rank and data type)
//   cudnnConvolutionBackwardBias: db[k] = α·Σ_{n, spatial} dY[n, k, ...] + β·db[k]
//                                 (db is [1, K, 1, ...] of dY's rank and data type)
// Double accumulation, one rounding (cudnn_internal.h).
#include <vector>

#include "runtime/cuda/emulator/cudnn_internal.h"

using namespace oat_emu::dnn;

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                                         const cudnnTensorDescriptor_t aDesc, const void* A,
                                         const void* beta, const cudnnTensorDescriptor_t cDesc,
                                         void* C) {
  return guard([&] {
    if (!handle || !alpha || !beta || !A || !C || !aDesc || !cDesc || !aDesc->set || !cDesc->set)
      return CUDNN_STATUS_BAD_PARAM;
    if (aDesc->nb != cDesc->nb || aDesc->dtype != cDesc->dtype) return CUDNN_STATUS_BAD_PARAM;
    for (int d = 0; d < aDesc->nb; ++d)
      if (aDesc->dims[d] != cDesc->dims[d] && aDesc->dims[d] != 1) return CUDNN_STATUS_BAD_PARAM;
    if (!computable(cDesc->dtype)) return CUDNN_STATUS_NOT_SUPPORTED;
    const cudnnDataType_t t = cDesc->dtype;
    const double a = scalar(alpha, t), b = scalar(beta, t);
    const Layout la = layout_of(*aDesc), lc = layout_of(*cDesc);
    oat_emu::enqueue(handle->stream, "cudnnAddTensor", [=] {
      const int64_t n = lc.numel();
      std::vector<double> acc(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i, aoff = 0;  // A's offset: C's index with broadcast dims at 0
        for (int d = lc.nb - 1; d >= 0; --d) {
          const int64_t id = rest % lc.dims[d];
          rest /= lc.dims[d];
          if (la.dims[d] != 1) aoff += id * la.strides[d];
        }
        acc[i] = load(A, t, aoff);  // all of A read before C is written (A may alias C)
      }
      for (int64_t i = 0; i < n; ++i) blend(C, t, lc.offset(i), a, b, acc[i]);
    });
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                                       const cudnnTensorDescriptor_t dyDesc,
                                                       const void* dy, const void* beta,
                                                       const cudnnTensorDescriptor_t dbDesc,
                                                       void* db) {
  return guard([&] {
    if (!handle || !alpha || !beta || !dy || !db || !dyDesc || !dbDesc || !dyDesc->set ||
        !dbDesc->set)
      return CUDNN_STATUS_BAD_PARAM;
    if (dyDesc->nb != dbDesc->nb || dyDesc->dtype != dbDesc->dtype) return CUDNN_STATUS_BAD_PARAM;
    for (int d = 0; d < dbDesc->nb; ++d)
      if (dbDesc->dims[d] != (d == 1 ? dyDesc->dims[1] : 1)) return CUDNN_STATUS_BAD_PARAM;
    if (!computable(dyDesc->dtype)) return CUDNN_STATUS_NOT_SUPPORTED;
    const cudnnDataType_t t = dyDesc->dtype;
    const double a = scalar(alpha, t), b = scalar(beta, t);
    const Layout ly = layout_of(*dyDesc), lb = layout_of(*dbDesc);
    oat_emu::enqueue(handle->stream, "cudnnConvolutionBackwardBias", [=] {
      const int K = ly.dims[1];
      std::vector<double> acc(static_cast<size_t>(K), 0.0);
      for (int64_t i = 0; i < ly.numel(); ++i) {
        int64_t rest = i;  // the channel index of logical element i
        for (int d = ly.nb - 1; d > 1; --d) rest /= ly.dims[d];
        acc[static_cast<size_t>(rest % K)] += load(dy, t, ly.offset(i));
      }
      for (int k = 0; k < K; ++k) blend(db, t, lb.offset(k), a, b, acc[k]);
    });
    return CUDNN_STATUS_SUCCESS;
  });
}
