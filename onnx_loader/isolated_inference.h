// libonnx's shape inference in a child process. ONNX 1.12's inference functions trust their
// inputs in places: ConvTranspose without kernel_shape reads the kernel's dims from a weight of
// the wrong rank past its end (SIGSEGV), Conv with a scalar weight likewise (onnx/onnx#6180), and
// the attribute checks of model.cc libonnx_unsafe cannot know the ranks of intermediate values
// before inference has computed them. So inference runs in a fork()ed child: the child runs
// onnx::shape_inference::InferShapes on the model and sends back the inferred model (or
// InferShapes' exception message) through a pipe; a child killed by a signal becomes an
// InferenceCrashed exception in the parent, which callers treat as a failed inference (a warning
// at load time: the kernels then name the bad node at run time).
#pragma once

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <stdexcept>

namespace oat::onnx_loader {

// libonnx's inference died of a signal (the message says which).
struct InferenceCrashed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// As onnx::shape_inference::InferShapes(m, schema registry, opts): m gains the inferred
// value_info and output types; throws std::runtime_error with InferShapes' message when it throws,
// InferenceCrashed when it crashes.
void infer_shapes_isolated(onnx::ModelProto& m, const onnx::ShapeInferenceOptions& opts);

}  // namespace oat::onnx_loader
