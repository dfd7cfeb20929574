// Folding of static shape values: the shape arithmetic that exporters trace (Shape -> Gather ->
// Unsqueeze -> Concat -> ConstantOfShape, Swin's attention mask, padding amounts, ...) evaluated
// once, where it depends only on dims that are fixed, so that the dims it produces become fixed
// too. Composite ops (runtime/composite.h) need static shapes when they are lowered; libonnx's
// shape inference (1.12) leaves such dims symbolic although every value on the path is a
// constant once the graph's fixed dims are known.
//
// What is known (a constant):
//   - Constant nodes, and integer/bool initializers. Floating initializers are NOT: the trainer
//     treats them as parameters (train/training_graph.h) and feeds them every step.
//   - Shape(x) / Size(x) where x's shape is fixed (value_info, a graph input, any initializer's
//     dims, a folded value). Where only some dims are fixed (a symbolic batch), Shape gives a
//     partly known vector: Gather / Slice / Squeeze / Unsqueeze / Identity / Reshape / Concat
//     and integer Add / Sub / Mul / Div / Mod of it are tracked element by element, and a result
//     whose elements are all known is a constant. A Reshape / Expand / ConstantOfShape whose
//     shape input is partly known gets the output dims it fixes in value_info.
//   - The outputs of a whitelisted deterministic op (integer and shape arithmetic, casts,
//     comparisons, Where, Range, ConstantOfShape, Expand, Reshape, Reduce*, ScatterND, ...)
//     whose inputs are all known and small: evaluated by a one-node Executor with the CPU kernels.
// Nothing computed from a graph input's values or a floating initializer is folded, and no
// tensor of more than `max_elements` elements is made or read. Graph outputs keep their node.
//
// A folded node is removed and each output a remaining node reads becomes an initializer with
// its exact shape in value_info. Then the shape inferer (set by onnx_loader: libonnx on the
// folded graph) refines value_info, and folding repeats (a Pad whose pads were folded now has a
// fixed output, so a Shape of it folds) until nothing changes.
#pragma once

#include <cstdint>

#include "runtime/graph.h"

namespace oat {

struct ShapeFoldOptions {
  int64_t max_elements = 65536;  // largest tensor folding reads or writes
  int max_rounds = 16;           // fold / re-infer rounds
};

struct ShapeFoldReport {
  size_t folded_nodes = 0;  // nodes replaced by initializers
  int rounds = 0;           // rounds that folded something
};

// Refines g.value_info in place (more dims fixed; never removes what is known). onnx_loader
// installs libonnx's shape inference (onnx_loader::refine_shapes) when it loads a model.
using ShapeInferer = void (*)(Graph& g);
void set_shape_inferer(ShapeInferer f);
ShapeInferer shape_inferer();

// Folds g in place as described above. Throws nothing for a node it cannot evaluate (it stays).
ShapeFoldReport fold_shape_constants(Graph& g, const ShapeFoldOptions& options = {});

}  // namespace oat
