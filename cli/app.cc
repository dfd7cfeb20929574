#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "runtime/error.h"

namespace oat::cli {

int run_main(int argc, char** argv) {
  CLI::App app{"onnx-amp-train: train ONNX models with automatic mixed precision"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "onnx-amp-train 0.1.0");

  InferOptions infer;
  auto* infer_cmd = app.add_subcommand(
      "infer", "Run a model on inputs (.npy or TensorProto .pb) and write output_<k>.pb files");
  infer_cmd->add_option("model", infer.model, "ONNX model file")->required();
  infer_cmd->add_option("-i,--input", infer.inputs,
                        "Input as [NAME=]FILE (.npy or .pb); without NAME, inputs bind in order")
      ->required();
  infer_cmd->add_option("-o,--output-dir", infer.out_dir,
                        "Folder for output_<k>.pb (ONNX test_data_set layout)")
      ->required();
  infer_cmd->add_option("--threads", infer.threads, "CPU threads (0: all cores)");
  infer_cmd->add_option("--repeat", infer.repeat, "Run N times and report the mean time")
      ->check(CLI::PositiveNumber);

  InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand(
      "inspect", "Print inputs, outputs, op counts, parameters, opsets and unsupported nodes");
  inspect_cmd->add_option("model", inspect.model, "ONNX model file")->required();
  inspect_cmd->add_flag("--json", inspect.json, "Print the report as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*infer_cmd) return run_infer(infer);
    if (*inspect_cmd) return run_inspect(inspect);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace oat::cli
