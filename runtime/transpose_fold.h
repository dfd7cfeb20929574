// Folding of back-to-back Transposes. tf2onnx converts NHWC Keras layers by wrapping each in
// Transposes to NCHW and back; where its transpose optimizer cannot push them through (a
// BatchNormalization kept for training), pairs that undo each other remain: a Keras MobileNetV2
// exported with its BatchNorm keeps 187 Transposes, a third of its CPU inference time.
//
//   Transpose(perm = q)(Transpose(perm = p)(x)) = Transpose(perm = r)(x),  r[i] = p[q[i]]
//
// (output axis i of the outer Transpose is its input's axis q[i], which is x's axis p[q[i]]).
// When r is the identity, the readers of the outer output read x instead and the outer node
// goes; otherwise the outer node transposes x by r directly. The inner node goes when nothing
// else reads its output. Graph outputs and values that an If/Loop/Scan body reads from the outer
// scope keep their producers (a caller or a subgraph names them), and a
// Transpose without a `perm` attribute (the reversal) or with a perm of another rank is left.
#pragma once

#include <cstddef>

#include "runtime/graph.h"

namespace oat {

// Folds every such pair in `g` (repeatedly, so chains fold too); returns the number of
// Transpose nodes removed.
size_t fold_transpose_pairs(Graph& g);

// Whether `g` has a pair to fold (cheap; the Executor copies the graph only then).
bool has_transpose_pairs(const Graph& g);

}  // namespace oat
