// `onnx-amp-train infer`: inputs from files, outputs as output_<k>.pb TensorProtos.
//
// Everything that can fail on the user's input (the output folder, the model, the inputs, the
// run) fails before the first output file is written, and the outputs of one run are written
// all or none, so a failed command never leaves half a result behind.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "runtime/threads.h"

namespace oat::cli {

namespace fs = std::filesystem;

namespace {

// Fails unless `dir` is a writable folder or can be created as one. Creates nothing.
void check_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw Error(cat(dir, ": output path exists and is not a folder"));
  } else {
    // The nearest existing ancestor must be a folder we can create entries in.
    fs::path parent = fs::absolute(p, ec).parent_path();
    while (!fs::exists(parent, ec) && parent.has_parent_path() && parent.parent_path() != parent)
      parent = parent.parent_path();
    if (!fs::is_directory(parent, ec))
      throw Error(
          cat(dir, ": cannot create output folder, '", parent.string(), "' is not a folder"));
    p = parent;
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0)
    throw Error(cat(dir, ": output folder '", p.string(), "' is not writable"));
}


}  // namespace

int run_infer(const InferOptions& o) {
  if (o.threads < 0) throw Error(cat("--threads ", o.threads, " must be 0 or more"));
  if (o.repeat < 1) throw Error(cat("--repeat ", o.repeat, " must be 1 or more"));
  set_num_threads(o.threads);
  check_output_dir(o.out_dir);  // fail fast, before loading a large model

  ExecutorOptions exec_options;
  exec_options.device = o.device == "cuda" ? Device::CUDA : Device::CPU;
  if (exec_options.device == Device::CUDA) cuda::require_device();  // before loading the model

  onnx_loader::Model model = onnx_loader::load_model(o.model);
  onnx_loader::require_supported_inputs(model, /*allow_sequences=*/true);
  Executor exec(model.graph, exec_options);
  std::map<std::string, Tensor> feeds = bind_input_files(o.inputs, model.graph, "input", true);
  // A float file for an input of another float type (float32 data for a converted float16
  // model) is rounded to the declared type, with a note; ONNX Runtime would ask the caller to.
  // So are a map's float values (onnx.numpy_helper.from_dict writes Python floats as float64).
  for (const auto& v : model.graph.inputs) {
    auto it = feeds.find(v.name);
    const bool tensor = it != feeds.end() && it->second.is_tensor() && v.kind == ValueKind::Tensor;
    const bool map = it != feeds.end() && it->second.kind() == ValueKind::Map &&
                     v.kind == ValueKind::Map;
    if ((!tensor && !map) || !is_floating(v.dtype) || !is_floating(it->second.dtype()) ||
        v.dtype == it->second.dtype())
      continue;
    std::cerr << "note: " << (map ? "the values of map input '" : "input '") << v.name
              << "' given as " << dtype_name(it->second.dtype()) << ", rounded to the model's "
              << dtype_name(v.dtype) << "\n";
    it->second = map ? Tensor::map(it->second.map_keys(),
                                   cast_tensor(it->second.map_values(), v.dtype))
                     : cast_tensor(it->second, v.dtype);
  }
  exec.validate_feeds(feeds);

  std::vector<Tensor> outputs;
  double total_ms = 0;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    outputs = exec.run(feeds);
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  std::vector<std::string> paths;
  for (size_t k = 0; k < outputs.size(); ++k) {
    paths.push_back((fs::path(o.out_dir) / cat("output_", k, ".pb")).string());
    std::error_code ec;
    if (fs::is_directory(paths.back(), ec))
      throw Error(cat(paths.back(), ": cannot write the output, a folder has its name"));
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) throw Error(cat(o.out_dir, ": cannot create output folder (", ec.message(), ")"));
  std::vector<std::string> written;
  try {
    for (size_t k = 0; k < outputs.size(); ++k) {
      onnx_loader::write_value_pb(outputs[k], model.graph.outputs[k].name, paths[k]);
      written.push_back(paths[k]);
    }
  } catch (...) {
    for (const auto& p : written) fs::remove(p, ec);
    throw;
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    std::cout << "output_" << k << ".pb  " << model.graph.outputs[k].name << "  "
              << (outputs[k].is_tensor()
                      ? cat(dtype_name(outputs[k].dtype()), " ", shape_str(outputs[k].shape()))
                      : outputs[k].describe())
              << "\n";
  std::cout << "time_ms " << total_ms / o.repeat << " (mean of " << o.repeat << ", "
            << (exec_options.device == Device::CUDA ? cuda::describe_device()
                                                    : cat(num_threads(), " threads"))
            << ")\n";
  return 0;
}

}  // namespace oat::cli
