// `onnx-amp-train convert MODEL -o OUT.onnx`: the FP16/BF16 inference model (DESIGN.md, job 2).
//
// Paints the model with the op lists (convert/precision.h), applies the plan with the
// initializers read only by low-precision nodes stored in FP16/BF16 (values beyond FP16's range
// clamped, each reported), writes it inside the original ModelProto (metadata, producer, opsets
// kept; external data beside OUT when the input had it), after the ONNX checker and strict type
// inference accept it, and prints: nodes converted and kept, casts, file sizes before and after,
// and every output's deviation from the FP32 model on sample inputs, computed with our runtime
// (random N(0,1) with dynamic dims bound to --batch, or --calib files). --auto --rtol R first
// searches for nodes to keep in FP32 (convert/auto_search.h).
//
// Every check on the user's input (the --to value, the output path, the model, the op-lists file,
// node names, calibration files) runs before anything is written; the output is written to a
// temporary file and renamed, so a failed command leaves no output behind.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace oat::cli {

struct ConvertOptions {
  std::string model;
  std::string out;
  std::string to = "fp16";
  bool keep_io_types = false;
  std::vector<std::string> block_ops, block_nodes;
  std::string op_lists;
  bool no_out_of_range_fp32 = false;
  std::vector<std::string> calib;  // [NAME=]FILE (.npy or .pb)
  int64_t batch = 2;
  uint64_t seed = 0;
  bool auto_search = false;
  double rtol = 1e-2;
  size_t max_pins = 64;
  bool print_plan = false;
  bool external_data = false;
  int threads = 0;
  bool no_verify = false;  // write even when the float32 model fails on the sample inputs
};

class ConvertCommand {
 public:
  explicit ConvertCommand(CLI::App& app);
  bool selected() const { return cmd_ && cmd_->parsed(); }
  int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  ConvertOptions o_;
};

int run_convert(const ConvertOptions& o);

}  // namespace oat::cli
