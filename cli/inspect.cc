// `onnx-amp-train inspect`: what a model is and what this build can run of it.
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "onnx_loader/model.h"
#include "runtime/executor.h"

namespace oat::cli {

int run_inspect(const InspectOptions& o) {
  onnx_loader::Model model = onnx_loader::load_model(o.model);
  const Graph& g = model.graph;
  std::map<std::string, int> op_counts;
  for (const Node& n : g.nodes) op_counts[(n.domain.empty() ? "" : n.domain + ".") + n.op_type]++;
  int64_t params = 0;
  size_t param_bytes = 0;
  for (const auto& [name, t] : g.initializers) {
    if (!is_floating(t.dtype())) continue;
    params += t.numel();
    param_bytes += t.nbytes();
  }
  auto unsupported = unsupported_nodes(g, Device::CPU, default_registry());

  if (o.json) {
    nlohmann::json j;
    j["model"] = o.model;
    j["ir_version"] = model.ir_version;
    j["producer"] = model.producer_name + " " + model.producer_version;
    for (const auto& [d, v] : g.opsets) j["opsets"][d.empty() ? "ai.onnx" : d] = v;
    for (const auto& v : g.inputs)
      j["inputs"].push_back({{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape_string()}});
    for (const auto& v : g.outputs)
      j["outputs"].push_back({{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape_string()}});
    j["nodes"] = g.nodes.size();
    j["op_counts"] = op_counts;
    j["parameters"] = params;
    j["parameter_bytes"] = param_bytes;
    j["unsupported"] = nlohmann::json::array();
    for (const auto& [node, why] : unsupported) j["unsupported"].push_back({{"node", node}, {"reason", why}});
    j["warnings"] = model.warnings;
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::cout << "model      " << o.model << "\n";
  std::cout << "producer   " << model.producer_name << " " << model.producer_version
            << "  (IR version " << model.ir_version << ")\n";
  std::cout << "opsets    ";
  for (const auto& [d, v] : g.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << ":" << v;
  std::cout << "\n\ninputs\n";
  for (const auto& v : g.inputs)
    std::cout << "  " << v.name << "  " << dtype_name(v.dtype) << " " << v.shape_string() << "\n";
  std::cout << "outputs\n";
  for (const auto& v : g.outputs)
    std::cout << "  " << v.name << "  " << dtype_name(v.dtype) << " " << v.shape_string() << "\n";
  std::cout << "\nnodes      " << g.nodes.size() << "\n";
  for (const auto& [op, n] : op_counts) std::cout << "  " << std::left << std::setw(28) << op << n << "\n";
  std::cout << "\nparameters " << params << " (" << std::fixed << std::setprecision(2)
            << param_bytes / 1048576.0 << " MiB) in " << g.initializers.size() << " initializers\n";
  if (unsupported.empty()) {
    std::cout << "\nevery node can run on the CPU\n";
  } else {
    std::cout << "\n" << unsupported.size() << " node(s) this build cannot run:\n";
    for (const auto& [node, why] : unsupported) std::cout << "  " << node << ": " << why << "\n";
  }
  for (const auto& w : model.warnings) std::cout << "warning: " << w << "\n";
  return 0;
}

}  // namespace oat::cli
