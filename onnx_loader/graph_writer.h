// Graph -> ModelProto, for models this project creates (the zoo, converted models). Models that
// were loaded are exported with save_model instead, which keeps the original proto.
#pragma once

#include <string>

#include "runtime/graph.h"

namespace oat::onnx_loader {

struct GraphWriteOptions {
  std::string producer_name = "onnx-amp-train";
  std::string producer_version = "0.1.0";
  std::string doc_string;
  int64_t ir_version = 8;  // what libonnx 1.12's checker accepts
  bool check = true;       // run the ONNX checker on the result before writing
};

// The serialised ModelProto. Throws Error naming the node when the checker rejects it.
std::string serialize_graph(const Graph& g, const GraphWriteOptions& options = {});
// Written to a temporary file and renamed.
void save_graph(const Graph& g, const std::string& path, const GraphWriteOptions& options = {});

}  // namespace oat::onnx_loader
