// ModelProto <-> Graph. The only header other folders include from onnx_loader/; protobuf types
// stay behind the opaque ModelProtoHandle.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::onnx_loader {

struct ModelProtoHandle;  // wraps onnx::ModelProto (defined in model.cc)

struct Model {
  Graph graph;
  std::string path;  // where it was loaded from ("" for in-memory models)
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::map<std::string, std::string> metadata;
  // Diagnostics from loading (shape inference skipped or partial, opset newer than libonnx knows).
  std::vector<std::string> warnings;
  // The original ModelProto, kept so export preserves everything we do not model.
  std::shared_ptr<ModelProtoHandle> proto;
};

struct LoadOptions {
  // ONNX shape inference (libonnx) fills graph.value_info and untyped graph outputs. Skipped, with
  // a warning in Model::warnings, for opsets newer than libonnx knows; the executor takes shapes
  // from the actual tensors either way.
  bool run_shape_inference = true;
  // Load external-data initializers (relative to the model's folder). When false, they stay
  // unloaded and their Tensor is undefined.
  bool load_external_data = true;
};

// Reads and converts a model file. Throws Error naming the file and what was wrong: not found,
// not an ONNX model (parse failure, no graph, IR >= 3 without opset_import: a truncated file),
// a cycle, a bad initializer, a missing external file; Unsupported for a node in an unknown
// domain (naming the node and the domain), sparse initializers, model-local functions.
Model load_model(const std::string& path, const LoadOptions& options = {});
Model load_model_from_bytes(const std::string& bytes, const std::string& base_dir,
                            const LoadOptions& options = {}, const std::string& name = "<memory>");

struct SaveOptions {
  // Write initializers of at least `external_threshold_bytes` to `<out>.data` beside the model
  // (location relative to the model, each tensor at a 4 KiB-aligned offset). Automatic when the
  // serialised model would pass `protobuf_limit_bytes`.
  bool external_data = false;
  size_t external_threshold_bytes = 1024;
  // Protobuf cannot write or read messages of 2 GB or more; this is that limit less headroom.
  // Tests lower it to exercise the automatic switch to external data without 2 GB of weights.
  size_t protobuf_limit_bytes = (size_t{1} << 31) - (size_t{64} << 20);
};

// Writes `model`'s original ModelProto with the initializers named in `initializers` replaced by
// these tensors (dtype and shape may change), everything else preserved: names, doc strings,
// metadata_props, opset_import, value_info, producer, node order. Initializers that were external
// data in the input are written inline (or to the new `<out>.data`). Written to a temporary file
// and renamed, so a failure never leaves a half-written output. Throws Error for an initializer
// name the model does not have.
void save_model(const Model& model, const std::map<std::string, Tensor>& initializers,
                const std::string& out_path, const SaveOptions& options = {});

// The domains and opset versions this build accepts. Unknown domains are rejected by name.
bool is_known_domain(const std::string& domain);

// Latest default-domain opset the linked libonnx knows (17 for libonnx 1.12).
int64_t libonnx_max_opset();

}  // namespace oat::onnx_loader
