// Exit status: 0 on success (and for --help / --version), 1 when a command fails on its input
// (a bad model, input or output path: one `error: ...` line on stderr), 2 for a command line
// that does not parse (also one `error: ...` line).
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <set>
#include <vector>

#include "cli/check_command.h"
#include "cli/commands.h"
#include "cli/convert_command.h"
#include "cli/train_commands.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "train/autodiff/gradient_op.h"

namespace oat::cli {

namespace {

// Messages are printed on one line: embedded newlines would split the `error:` line.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

}  // namespace

int run_main(int argc, char** argv) {
  // ONNX's Gradient op runs through train/'s autodiff (train/autodiff/gradient_op.h).
  oat::train::register_gradient_op();
  // `train` is the default subcommand: `onnx-amp-train model.onnx ...` means
  // `onnx-amp-train train model.onnx ...`.
  static const std::set<std::string> kSubcommands = {"train", "infer", "inspect",
                                                     "eval",  "zoo",   "convert", "check"};
  std::vector<char*> args(argv, argv + argc);
  static char kTrain[] = "train";
  if (argc > 1 && argv[1][0] != '-' && !kSubcommands.count(argv[1]))
    args.insert(args.begin() + 1, kTrain);
  argc = static_cast<int>(args.size());
  argv = args.data();

  CLI::App app{"onnx-amp-train: train ONNX models with automatic mixed precision"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "onnx-amp-train 0.1.0");

  InferOptions infer;
  auto* infer_cmd = app.add_subcommand(
      "infer", "Run a model on inputs (.npy or TensorProto .pb) and write output_<k>.pb files");
  infer_cmd->add_option("model", infer.model, "ONNX model file")->required();
  infer_cmd->add_option(
      "-i,--input", infer.inputs,
      "Input as [NAME=]FILE (.npy or .pb). Without NAME, a .pb's stored name or a "
      ".npy's file stem binds it to the input of that name, else inputs bind in order. A "
      "sequence or optional input is given as NAME=FILE.pb (a SequenceProto or "
      "OptionalProto). A model without inputs needs none");
  infer_cmd
      ->add_option("-o,--output-dir", infer.out_dir,
                   "Folder for output_<k>.pb (ONNX test_data_set layout); created if missing")
      ->required();
  infer_cmd->add_option("--threads", infer.threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  infer_cmd->add_option("--repeat", infer.repeat, "Run N times and report the mean time")
      ->check(CLI::PositiveNumber);
  infer_cmd->add_option("--device", infer.device, "cpu or cuda (fails when no CUDA device answers)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand(
      "inspect", "Print inputs, outputs, op counts, parameters, opsets and unsupported nodes");
  inspect_cmd->add_option("model", inspect.model, "ONNX model file")->required();
  inspect_cmd->add_flag("--json", inspect.json, "Print the report as JSON");
  auto* precision_opt =
      inspect_cmd
          ->add_option("--precision", inspect.precision,
                       "Also print the mixed-precision plan for fp16 or bf16: node, op, "
                       "precision, reason, totals")
          ->check(CLI::IsMember({"fp16", "bf16"}));
  inspect_cmd
      ->add_option("--op-lists", inspect.op_lists,
                   "JSON file adding/removing ops per list: {\"deny\": {\"add\": [...]}, ...}")
      ->needs(precision_opt);
  inspect_cmd
      ->add_option("--fp32-nodes", inspect.fp32_nodes, "Nodes pinned to FP32 (comma-separated)")
      ->delimiter(',')
      ->needs(precision_opt);
  inspect_cmd
      ->add_option("--fp16-nodes", inspect.low_nodes,
                   "Nodes pinned to the low precision (comma-separated)")
      ->delimiter(',')
      ->needs(precision_opt);
  inspect_cmd
      ->add_flag("--no-out-of-range-fp32", inspect.no_out_of_range_fp32,
                 "fp16: paint Mul/Div nodes reading a constant with max |x| < 6.1e-5, and "
                 "nodes reading one with max |x| > 65504, like any other (by default "
                 "they stay fp32)")
      ->needs(precision_opt);

  TrainCommands train_commands(app);
  ConvertCommand convert_command(app);
  CheckCommand check_command(app);

  // The device commands share one process-wide choice of cuDNN convolution algorithms.
  bool cudnn_benchmark = false;
  for (const char* name : {"train", "eval", "infer", "check"})
    app.get_subcommand(name)->add_flag(
        "--cudnn-benchmark", cudnn_benchmark,
        "cuda: choose each convolution shape's cuDNN algorithms by timing them on the device "
        "(cudnnFind*AlgorithmEx, as torch.backends.cudnn.benchmark = True or ONNX Runtime's "
        "EXHAUSTIVE search) instead of by cuDNN's heuristics; the first step takes longer");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "error: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  cuda::set_cudnn_benchmark(cudnn_benchmark);
  try {
    if (train_commands.selected()) return train_commands.run();
    if (*infer_cmd) return run_infer(infer);
    if (*inspect_cmd) return run_inspect(inspect);
    if (convert_command.selected()) return convert_command.run();
    if (check_command.selected()) return check_command.run();
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace oat::cli
