#include "cli/input_files.h"

#include <filesystem>
#include <set>

#include "onnx_loader/tensor_io.h"
#include "runtime/error.h"

namespace oat::cli {

namespace fs = std::filesystem;

std::map<std::string, Tensor> bind_input_files(const std::vector<std::string>& specs,
                                               const Graph& g, const std::string& what,
                                               bool allow_initializers) {
  std::map<std::string, Tensor> feeds;
  std::set<std::string> declared;
  for (const auto& v : g.inputs) declared.insert(v.name);
  std::vector<std::pair<std::string, onnx_loader::NamedTensor>> unnamed;
  for (const std::string& spec : specs) {
    std::string name, file = spec;
    const auto eq = spec.find('=');
    std::error_code ec;
    if (eq != std::string::npos && !fs::exists(spec, ec)) {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
      if (name.empty()) throw Error(cat(what, " '", spec, "': empty name before '='"));
    }
    // A sequence, optional or map input (NAME=FILE) is read as its SequenceProto / OptionalProto /
    // MapProto.
    ValueKind kind = ValueKind::Tensor;
    DType declared_value = DType::Undefined;
    for (const auto& v : g.inputs)
      if (v.name == name) kind = v.kind, declared_value = v.dtype;
    onnx_loader::NamedTensor nt;
    try {
      nt = kind == ValueKind::Tensor ? onnx_loader::read_tensor_file(file)
                                     : onnx_loader::read_value_pb(file, kind);
    } catch (const Unsupported&) {
      throw;
    } catch (const Error& e) {
      // A file without NAME= is read as a tensor: say how a non-tensor input is given.
      const ValueInfo* other = nullptr;
      for (const auto& v : g.inputs)
        if (v.kind != ValueKind::Tensor && !other) other = &v;
      if (!name.empty() || !other) throw;
      throw Error(cat(e.what(), " (a file without NAME= is read as a tensor; input '",
                      other->name, "' is a ", other->type_string(), ": give it as ", other->name,
                      "=FILE.pb)"));
    }
    // An empty map's file holds no value, so no value type: it takes the declared one.
    if (nt.tensor.kind() == ValueKind::Map && nt.tensor.dtype() == DType::Undefined &&
        declared_value != DType::Undefined)
      nt.tensor = Tensor::map(nt.tensor.map_keys(), Tensor(declared_value, {0}));
    if (name.empty()) {
      unnamed.emplace_back(file, std::move(nt));
      continue;
    }
    if (!declared.count(name) && !(allow_initializers && g.initializers.count(name))) {
      std::string known;
      for (const auto& v : g.inputs) known += (known.empty() ? "" : ", ") + v.name;
      throw Error(cat(what, " '", name, "' is not an input of the model (its inputs: ", known, ")"));
    }
    if (!feeds.emplace(name, nt.tensor).second) throw Error(cat(what, " '", name, "' given twice"));
  }
  // Files whose stored name is an input bind to it; the rest fill the unbound inputs in order.
  std::vector<std::pair<std::string, Tensor>> positional;
  for (auto& [file, nt] : unnamed) {
    if (declared.count(nt.name) && !feeds.count(nt.name))
      feeds.emplace(nt.name, nt.tensor);
    else
      positional.emplace_back(file, nt.tensor);
  }
  size_t next = 0;
  for (auto& [file, t] : positional) {
    while (next < g.inputs.size() && feeds.count(g.inputs[next].name)) ++next;
    if (next == g.inputs.size())
      throw Error(cat(what == "input" ? "" : what + " ", file,
                      ": more inputs given than the model has (", g.inputs.size(), ")"));
    feeds.emplace(g.inputs[next].name, t);
  }
  return feeds;
}

}  // namespace oat::cli
