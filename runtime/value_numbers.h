// The numbers a non-tensor value holds, for comparisons of whole outputs (check's end-to-end
// error, convert's deviation from float32): ZipMap's sequence of maps compares as its maps'
// values one after another, its keys exactly.
#pragma once

#include "runtime/tensor.h"

namespace oat {

// A tensor itself; a map's values; a sequence's items (tensors or maps) flattened one after
// another, as one 1-D float32 tensor. Undefined for an optional or a sequence of sequences.
Tensor flat_values(const Tensor& v);

// Whether two values have the same structure and map keys: equal kinds, item counts, and each
// map's keys equal (tensors: always true; their shapes are compared by the callers).
bool same_keys(const Tensor& a, const Tensor& b);

}  // namespace oat
