// `onnx-amp-train inspect`: what a model is and what this build can run of it.
//
// Reports the inputs and outputs (dtype and shape, symbolic dims by name), the opsets, the node
// count by op, the parameters (floating-point initializers: element count and bytes; other
// initializers such as shape constants are counted separately), and every node this build cannot
// run on the CPU: ops it has no kernel for, and ops whose kernels lack the node's dtype when the
// model's types tell it. Loader warnings (e.g. shape inference skipped for a new opset) follow.
//
// With --precision fp16|bf16 the mixed-precision plan follows (convert/precision.h): one line per
// node with its op, precision and the reason (which list, which neighbour, which pin), and the
// totals; --op-lists, --fp32-nodes and --fp16-nodes change it as they change convert and train.
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "convert/precision.h"
#include "onnx_loader/model.h"
#include "runtime/composite.h"
#include "runtime/executor.h"
#include "train/initializer_aliases.h"

namespace oat::cli {

namespace {

// The dtype the executor will key this node's kernel on (its first present input's, Where's
// second), when the model's initializers and value_info tell it; Undefined when unknown.
DType static_dtype_key(const Graph& g, const Node& n) {
  for (size_t i = n.op == OpId::Where ? 1 : 0; i < n.inputs.size(); ++i) {
    const std::string& in = n.inputs[i];
    if (in.empty()) continue;
    auto it = g.initializers.find(in);
    if (it != g.initializers.end() && it->second.defined()) return it->second.dtype();
    const ValueInfo* vi = g.find_value_info(in);
    return vi ? vi->dtype : DType::Undefined;
  }
  return DType::Undefined;
}

// unsupported_nodes() plus the dtype check above.
std::vector<std::pair<std::string, std::string>> cannot_run(const Graph& g) {
  const KernelRegistry& reg = default_registry();
  auto r = unsupported_nodes(g, Device::CPU, reg);
  std::set<std::string> listed;
  for (const auto& u : r) listed.insert(u.first);
  for (const Node& n : g.nodes) {
    if (listed.count(n.describe()) || is_composite(n)) continue;  // composites run as expansions
    const DType key = static_dtype_key(g, n);
    if (key != DType::Undefined && !reg.supports(n.op, Device::CPU, key))
      r.emplace_back(n.describe(),
                     cat("op ", n.op_type, " has no CPU kernel for ", dtype_name(key)));
  }
  return r;
}

nlohmann::json dims_json(const ValueInfo& v) {
  if (!v.shape) return nullptr;
  nlohmann::json dims = nlohmann::json::array();
  for (const Dim& d : *v.shape) {
    if (d.fixed())
      dims.push_back(d.value);
    else if (!d.param.empty())
      dims.push_back(d.param);
    else
      dims.push_back(nullptr);
  }
  return dims;
}

nlohmann::json value_json(const ValueInfo& v) {
  nlohmann::json j = {{"name", v.name},
                      {"dtype", dtype_name(v.dtype)},
                      {"shape", v.shape_string()},
                      {"dims", dims_json(v)}};
  // a sequence, optional or map: its whole type ("sequence(map(string, float32))"); dtype is
  // then its element's (a map's value) type
  if (v.kind != ValueKind::Tensor) j["type"] = v.type_string();
  return j;
}

// The plan --precision asks for; nullopt without it. Errors name the model.
std::optional<convert::PrecisionPlan> precision_plan(const InspectOptions& o, const Graph& g) {
  if (o.precision.empty()) return std::nullopt;
  convert::PaintOptions p;
  if (o.precision == "fp16")
    p.low = DType::F16;
  else if (o.precision == "bf16")
    p.low = DType::BF16;
  else
    throw Error(cat("--precision: expected fp16 or bf16, got '", o.precision, "'"));
  if (!o.op_lists.empty()) p.lists.apply_json_file(o.op_lists);
  p.fp32_nodes.insert(o.fp32_nodes.begin(), o.fp32_nodes.end());
  p.low_nodes.insert(o.low_nodes.begin(), o.low_nodes.end());
  p.out_of_range_fp32 = !o.no_out_of_range_fp32;
  try {
    return convert::paint(g, p);
  } catch (const Error& e) {
    throw Error(cat(o.model, ": ", e.what()));
  }
}

nlohmann::json plan_json(const convert::PrecisionPlan& plan) {
  nlohmann::json j;
  j["low"] = dtype_name(plan.low);
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : plan.nodes)
    j["nodes"].push_back(
        {{"node", n.node},
         {"op", n.op_type},
         {"precision", n.carries_floats ? nlohmann::json(dtype_name(n.dtype)) : nlohmann::json()},
         {"reason", n.reason}});
  j["totals"] = {{dtype_name(plan.low), plan.count(plan.low)},
                 {"float32", plan.count(DType::F32)},
                 {"without_floats", plan.count_without_floats()}};
  return j;
}

}  // namespace

int run_inspect(const InspectOptions& o) {
  onnx_loader::Model model = onnx_loader::load_model(o.model);
  const Graph& g = model.graph;
  const auto plan = precision_plan(o, g);
  std::map<std::string, int> op_counts;
  for (const Node& n : g.nodes) op_counts[(n.domain.empty() ? "" : n.domain + ".") + n.op_type]++;
  int64_t params = 0, other_elems = 0;
  size_t param_bytes = 0, other_bytes = 0;
  int num_params = 0;
  for (const auto& [name, t] : g.initializers) {
    if (is_floating(t.dtype())) {
      params += t.numel();
      param_bytes += t.nbytes();
      ++num_params;
    } else {
      other_elems += t.numel();
      if (t.dtype() == DType::String) {  // the text, as the file stores it (string_data)
        for (int64_t i = 0; i < t.numel(); ++i) other_bytes += t.data<std::string>()[i].size();
      } else {
        other_bytes += t.nbytes();
      }
    }
  }
  // Identity copies of float initializers (torch.onnx's merged equal-valued parameters) and
  // merged reads (tf2onnx's), which training unties into initializers of their own
  // (train/initializer_aliases.h).
  std::vector<std::string> aliases;
  int64_t alias_elems = 0;
  {
    const Graph untied = train::untie_initializer_aliases(g, &aliases);
    for (const auto& a : aliases) alias_elems += untied.initializers.at(a).numel();
  }
  const auto unsupported = cannot_run(g);

  if (o.json) {
    nlohmann::json j;
    j["model"] = o.model;
    j["ir_version"] = model.ir_version;
    j["producer"] = {{"name", model.producer_name}, {"version", model.producer_version}};
    j["opsets"] = nlohmann::json::object();
    for (const auto& [d, v] : g.opsets) j["opsets"][d.empty() ? "ai.onnx" : d] = v;
    j["inputs"] = nlohmann::json::array();
    for (const auto& v : g.inputs) j["inputs"].push_back(value_json(v));
    j["outputs"] = nlohmann::json::array();
    for (const auto& v : g.outputs) j["outputs"].push_back(value_json(v));
    j["nodes"] = g.nodes.size();
    j["op_counts"] = op_counts;
    j["parameters"] = params;
    j["parameter_bytes"] = param_bytes;
    j["parameter_tensors"] = num_params;
    j["aliased_parameter_tensors"] = aliases.size();  // trained as parameters of their own
    j["trained_parameters"] = params + alias_elems;
    j["other_initializer_elements"] = other_elems;
    j["other_initializer_bytes"] = other_bytes;
    j["unsupported_inputs"] = model.unsupported_inputs;
    j["unsupported"] = nlohmann::json::array();
    for (const auto& [node, why] : unsupported)
      j["unsupported"].push_back({{"node", node}, {"reason", why}});
    j["warnings"] = model.warnings;
    if (plan) j["precision_plan"] = plan_json(*plan);
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::cout << "model      " << o.model << "\n";
  std::cout << "producer   " << model.producer_name << " " << model.producer_version
            << "  (IR version " << model.ir_version << ")\n";
  std::cout << "opsets    ";
  for (const auto& [d, v] : g.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << ":" << v;
  std::cout << "\n\ninputs\n";
  for (const auto& v : g.inputs) {
    auto bad = model.unsupported_inputs.find(v.name);
    std::cout << "  " << v.name << "  "
              << (bad != model.unsupported_inputs.end() ? cat(bad->second, " ", v.shape_string())
                                                        : v.type_string())
              << (bad != model.unsupported_inputs.end() ? "  (a type this build cannot feed)" : "")
              << "\n";
  }
  std::cout << "outputs\n";
  for (const auto& v : g.outputs) std::cout << "  " << v.name << "  " << v.type_string() << "\n";
  std::cout << "\nnodes      " << g.nodes.size() << "\n";
  for (const auto& [op, n] : op_counts)
    std::cout << "  " << std::left << std::setw(28) << op << n << "\n";
  std::cout << "\nparameters " << params << " (" << param_bytes << " bytes, " << std::fixed
            << std::setprecision(2) << param_bytes / 1048576.0 << " MiB) in " << num_params
            << " tensors\n";
  if (!aliases.empty())
    std::cout << "aliases    " << aliases.size()
              << " copies of merged initializers (the exporter wrote tensors that started equal "
                 "once: Identity nodes in torch.onnx, one initializer read several times in "
                 "tf2onnx); training unties them: "
              << params + alias_elems << " parameters in " << num_params + aliases.size()
              << " tensors\n";
  if (g.initializers.size() > static_cast<size_t>(num_params))
    std::cout << "other      " << g.initializers.size() - static_cast<size_t>(num_params)
              << " integer/bool/string initializers, " << other_elems << " elements ("
              << other_bytes << " bytes)\n";
  if (unsupported.empty() && model.unsupported_inputs.empty()) {
    std::cout << "\nevery node can run on the CPU\n";
  } else if (unsupported.empty()) {
    std::cout << "\nevery node can run on the CPU, but " << model.unsupported_inputs.size()
              << " input(s) have a type this build cannot feed\n";
  } else {
    std::cout << "\n" << unsupported.size() << " node(s) this build cannot run:\n";
    for (const auto& [node, why] : unsupported) std::cout << "  " << node << ": " << why << "\n";
  }
  for (const auto& w : model.warnings) std::cout << "warning: " << w << "\n";
  if (plan) std::cout << "\nprecision plan (" << o.precision << ")\n" << plan->to_string();
  return 0;
}

}  // namespace oat::cli
