// Launchers of the TopK kernels (topk_impl.cu); the order and its rules are in topk.cc.
#pragma once

#include <cstddef>

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Bytes of device scratch launch_topk needs for `lanes` lanes of `len` elements
// (lanes · len < 2^31: CUB's segmented sort counts items in int).
size_t topk_scratch_bytes(int64_t lanes, int64_t len);

// X (F32, F16 or BF16) viewed as [outer, len, inner]: each lane X[o, :, i] is sorted (CUB's stable
// segmented radix sort on order-preserving 32-bit keys, so equal values keep the lower index
// first) and its first k elements go to values [outer, k, inner] (X's dtype) and indices (int64).
// `scratch` holds topk_scratch_bytes(outer · inner, len) bytes.
void launch_topk(ElemType t, const void* x, void* values, int64_t* indices, int64_t outer,
                 int64_t len, int64_t inner, int64_t k, bool largest, void* scratch,
                 size_t scratch_bytes, cudaStream_t s);

}  // namespace oat::cuda
