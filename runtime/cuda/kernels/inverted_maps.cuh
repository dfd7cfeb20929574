// The adjoint walk shared by PadGrad and ResizeGrad (one thread per dX element, no atomics).
// Each axis d has an inverted map in `inv`: for X position j, the entries
// first[j] .. first[j + 1] (first at inv[first_offset[d] + j]) index the list of Y positions
// that read j. dX element e (row-major over x_dims) visits every combination c of those entries,
// last axis fastest (the CPU's summation order); visit(c) gets c[d] as an index into axis d's
// entries. An axis with no entries means no combination: visit is never called.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

template <class Visit>
__device__ __forceinline__ void for_each_inverted_source(int64_t e, int rank,
                                                         const int64_t* x_dims,
                                                         const int64_t* first_offset,
                                                         const int64_t* inv, Visit&& visit) {
  int64_t lo[kMaxRank], hi[kMaxRank], c[kMaxRank];
  bool empty = false;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t q = e / x_dims[d];
    const int64_t j = e - q * x_dims[d];
    e = q;
    lo[d] = inv[first_offset[d] + j];
    hi[d] = inv[first_offset[d] + j + 1];
    c[d] = lo[d];
    empty = empty || lo[d] == hi[d];
  }
  while (!empty) {
    visit(static_cast<const int64_t*>(c));
    int d = rank - 1;  // next combination, last axis fastest
    for (; d >= 0; --d) {
      if (++c[d] < hi[d]) break;
      c[d] = lo[d];
    }
    empty = d < 0;
  }
}

}  // namespace oat::cuda
