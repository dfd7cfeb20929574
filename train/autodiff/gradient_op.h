// ONNX's Gradient op (domain ai.onnx.preview.training, opset 1) through this project's autodiff:
//
//   dy_dx₁, ..., dy_dxₙ = Gradient(x₁..xₙ, z₁..zₘ; xs = [names], zs = [names], y = name)
//
// The attributes name values of the graph: y is computed from the values named in xs and zs;
// the node's inputs are the values at which the derivative is taken (the forward from xs ∪ zs to
// y is recomputed at them; they may differ from the graph's own xs and zs). Output k is
// ∂(Σ y)/∂xₖ: y's gradient is seeded with ones, so a scalar y gives its plain gradient (as
// ONNX's test cases, test_gradient_of_add*), and a tensor y the vector-Jacobian product with ones.
// An xₖ that y does not depend on gets zeros of its shape.
//
// It runs as a composite op (runtime/composite.h) whose expansion is the copied forward nodes
// followed by their gradient nodes (build_backward). The nodes that compute y must come before
// the Gradient node in the graph; y may depend on initializers besides xs and zs, but not on
// other graph inputs (the spec: y is a function of xs and zs), nor through control flow. Every op
// on the way needs a gradient builder, so a Gradient of a Gradient (second order) is refused by
// the first gradient op without one.
//
// The expander lives here, above the runtime, because autodiff is part of train/: the runtime
// knows the op once register_gradient_op() has run (the CLI calls it at start; so do the tests).
#pragma once

namespace oat::train {

// Registers the expander of ai.onnx.preview.training.Gradient with the runtime's composite table.
// Idempotent, thread-safe.
void register_gradient_op();

}  // namespace oat::train
