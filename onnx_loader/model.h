// ModelProto <-> Graph. The only header other folders include from onnx_loader/; protobuf types
// stay behind the opaque ModelProtoHandle.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  // Graph inputs whose declared element type no kernel takes (COMPLEX64, FLOAT8, ...) or
  // that are neither tensors nor sequences / optionals of them (maps, sequences of sequences):
  // input name -> the ONNX type's name. require_supported_inputs() refuses them before a run.
  std::map<std::string, std::string> unsupported_inputs;
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

// Throws Unsupported naming the first graph input in model.unsupported_inputs (a run would
// otherwise take any file for it: a COMPLEX64 input fed float data), and, unless
// `allow_sequences` (infer), the first sequence, optional or string input (train, eval and
// check feed batches of numeric tensors).
void require_supported_inputs(const Model& model, bool allow_sequences = false);

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
// and renamed, so a failure never leaves a half-written output. A name that the file computes as
// `name = Identity(initializer)` (an alias that training untied, train/initializer_aliases.h)
// becomes an initializer in place of that Identity node; an untied read (untied_read_name)
// becomes a new initializer that the node's input names. Throws Error for any other name the
// model does not have as an initializer.
void save_model(const Model& model, const std::map<std::string, Tensor>& initializers,
                const std::string& out_path, const SaveOptions& options = {});

// The name of the initializer that input `k` of node `node` reads after training split a merged
// `initializer` into one per read (train/initializer_aliases.h): "initializer@node#k". save_model
// writes such a name as a new initializer and points that input at it.
std::string untied_read_name(const std::string& initializer, const std::string& node, size_t k);

// The files that hold `model`: its path, then each external-data file its initializers name
// (resolved against the model's folder), each once. For sizes in reports.
std::vector<std::string> model_files(const Model& model);

// What save_rewritten_model wrote.
struct SavedModel {
  std::vector<std::string> files;  // the model, then `<out>.data` when initializers went there
  uintmax_t bytes = 0;             // total size of those files
  bool checked = false;            // the ONNX checker (and type inference) accepted it
  std::string not_checked_why;     // when !checked: e.g. "opset 18 is newer than libonnx knows"
};

// Writes `graph`, a rewritten version of `model.graph` (nodes, initializers, types may all have
// changed: e.g. an FP16 inference model from convert/), inside `model`'s original ModelProto:
// ir_version, producer, doc strings, metadata_props and the graph's name are kept; opset_import
// comes from graph.opsets; nodes, initializers, inputs and outputs from `graph`; value_info is
// written for the values the original model declared (with `graph`'s current types), not for
// what shape inference added at load time. Initializers go to `<out>.data` beside the output when
// options.external_data is set, when the input model kept any initializer in external data, or
// when the model would pass the protobuf limit. Before anything is written, the ONNX checker and
// strict type inference (libonnx) must accept the model; both are skipped, and the reason
// returned, when the model's opset or IR version is newer than libonnx knows. Throws Error with
// the checker's message otherwise. Written to temporary files and renamed.
SavedModel save_rewritten_model(const Model& model, const Graph& graph, const std::string& out_path,
                                const SaveOptions& options = {});

// What ONNX's schema of an op (libonnx) allows for one of its inputs: the name of the input's type
// constraint ("T": inputs and outputs sharing it must have one type) and the element types the
// constraint allows (those the runtime stores; string, complex, ... are left out).
struct TypeConstraint {
  std::string name;
  std::vector<DType> allowed;
};
// For `op_type` in `domain` ("" is ai.onnx) at the imported `opset` (for newer opsets than libonnx
// knows, its newest schema); a variadic last input covers every index from its own. nullopt when
// libonnx has no schema for the op or the input index.
std::optional<TypeConstraint> input_type_constraint(const std::string& op_type,
                                                    const std::string& domain, int64_t opset,
                                                    size_t index);

// ONNX shape inference (libonnx, with data propagation) on a Graph: fills g.value_info, fixing
// dims that were unknown; never removes what was known. Skipped for opsets newer than libonnx
// knows. Loading a model installs it as the runtime's shape inferer (runtime/shape_fold.h), which
// re-infers shapes after folding static shape values.
void refine_shapes(Graph& g);

// The domains and opset versions this build accepts. Unknown domains are rejected by name.
bool is_known_domain(const std::string& domain);

// Latest default-domain opset the linked libonnx knows (17 for libonnx 1.12).
int64_t libonnx_max_opset();

}  // namespace oat::onnx_loader
