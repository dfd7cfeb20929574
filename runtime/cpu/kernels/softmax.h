// The softmax family's shared routine, also used by SoftmaxCrossEntropyLoss (loss.cc).
#pragma once

#include <cstdint>

namespace oat::cpu {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

// x and y viewed as [outer, len, inner] (row-major); applies `kind` along the middle axis:
//   Softmax    y = exp(x - max) / Σ exp(x - max)
//   LogSoftmax y = x - max - log Σ exp(x - max)
//   Hardmax    y = 1 at the first maximum, 0 elsewhere
// Instantiated for float and double.
template <class T>
void softmax_along(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, SoftmaxKind kind);

}  // namespace oat::cpu
