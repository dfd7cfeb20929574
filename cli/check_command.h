// `onnx-amp-train check MODEL`: one batch through the mixed-precision path (CUDA when a device
// answers, else the CPU's F16/BF16 kernels) and through the CPU FP32 reference; per node, the
// error of outputs and gradients against a tolerance set by the node's precision (train/check.h
// defines the measures). Prints which paths it compares on its first line, then the table and a
// summary; --json FILE writes the same as JSON. Exit status 0 when every node is within
// tolerance, 1 when one is not (named on stdout) or on bad input (one `error:` line).
// --forward-only (chosen by itself, on a line saying why, when nothing can be trained: no float
// initializer, a non-float output, no parameter reaching the loss) compares the inference model
// as `convert` writes it with the FP32 model, without loss or gradients (train/check.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/train_commands.h"

namespace oat::cli {

struct CheckCommandOptions {
  std::string model;
  std::string precision = "fp16";  // fp16 | bf16 | fp32
  int64_t batch = 4;
  std::string device = "auto";     // auto (cuda when a device answers) | cpu | cuda
  // --input NAME=FILE.npy: the batch of a model input (its first --batch samples).
  std::vector<std::string> inputs;
  std::string data = "random";     // random | IDX folder | fashion-mnist: its first training batch
                                   // | X.npy: its first inputs (random labels)
  std::vector<float> normalize;    // MEAN,STD as train's --normalize
  uint64_t seed = 0;
  std::string loss;  // "": cross-entropy, or mse for one unit on the class axis (run_check_command)
  LabelFlags labels;               // --class-axis, --ignore-index (as train's)
  double loss_scale = 0.0;  // 0: dynamic start (65536 for fp16, halved on overflow), 1 otherwise
  double rtol_fp32 = -1, rtol_fp16 = -1, rtol_bf16 = -1;  // < 0: the defaults of train/check.h
  std::string op_lists;
  std::vector<std::string> fp32_nodes, fp16_nodes;
  bool no_out_of_range_fp32 = false;
  std::string json;
  int threads = 0;
  // --forward-only: no loss, no backward pass; the inference model (what `convert` writes)
  // against the FP32 model, node by node. Chosen by itself for a model with no float
  // initializer or whose loss output is not float (nothing to train, no loss to attach).
  bool forward_only = false;
  // Test hook: every float output of this node on the checked path is multiplied by 1.25
  // (a deliberately broken kernel). Hidden from --help.
  std::string inject_error;
};

class CheckCommand {
 public:
  explicit CheckCommand(CLI::App& app);
  bool selected() const { return cmd_ && cmd_->parsed(); }
  int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  CheckCommandOptions o_;
};

int run_check(const CheckCommandOptions& o);

}  // namespace oat::cli
