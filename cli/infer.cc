// `onnx-amp-train infer`: inputs from files, outputs as output_<k>.pb TensorProtos.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "runtime/threads.h"

namespace oat::cli {

namespace fs = std::filesystem;

int run_infer(const InferOptions& o) {
  set_num_threads(o.threads);
  // Check the output folder before any work, so a bad path fails fast.
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec))
    throw Error(cat(o.out_dir, ": output path exists and is not a folder"));
  if (!fs::exists(o.out_dir, ec)) {
    fs::create_directories(o.out_dir, ec);
    if (ec) throw Error(cat(o.out_dir, ": cannot create output folder (", ec.message(), ")"));
  }

  onnx_loader::Model model = onnx_loader::load_model(o.model);
  Executor exec(model.graph);

  std::map<std::string, Tensor> feeds;
  size_t positional = 0;
  for (const std::string& spec : o.inputs) {
    std::string name, file = spec;
    auto eq = spec.find('=');
    if (eq != std::string::npos && !fs::exists(spec)) {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
    }
    onnx_loader::NamedTensor nt = onnx_loader::read_tensor_file(file);
    if (name.empty()) {
      if (positional >= model.graph.inputs.size())
        throw Error(cat(file, ": more inputs given than the model has (",
                        model.graph.inputs.size(), ")"));
      name = model.graph.inputs[positional++].name;
    }
    if (feeds.count(name)) throw Error(cat("input '", name, "' given twice"));
    feeds[name] = nt.tensor;
  }

  std::vector<Tensor> outputs;
  double total_ms = 0;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    outputs = exec.run(feeds);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string path = (fs::path(o.out_dir) / cat("output_", k, ".pb")).string();
    onnx_loader::write_tensor_pb(outputs[k], model.graph.outputs[k].name, path);
    std::cout << "output_" << k << ".pb  " << model.graph.outputs[k].name << "  "
              << dtype_name(outputs[k].dtype()) << " " << shape_str(outputs[k].shape()) << "\n";
  }
  std::cout << "time_ms " << total_ms / o.repeat << " (mean of " << o.repeat << ", "
            << num_threads() << " threads)\n";
  return 0;
}

}  // namespace oat::cli
