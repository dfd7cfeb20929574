// One function per subcommand; each takes its parsed options and returns an exit status.
#pragma once

#include <string>
#include <vector>

namespace oat::cli {

struct InferOptions {
  std::string model;
  std::vector<std::string> inputs;  // "[NAME=]FILE"
  std::string out_dir;
  int threads = 0;
  int repeat = 1;  // run this many times and report the mean time (benchmarks)
  std::string device = "cpu";  // "cpu" | "cuda"
};
int run_infer(const InferOptions& o);

struct InspectOptions {
  std::string model;
  bool json = false;
  // --precision fp16|bf16 adds the mixed-precision plan (convert/precision.h): node, op,
  // precision, reason, totals; with the op-list overrides and pins convert and train take.
  std::string precision;
  std::string op_lists;                 // JSON file: {"allow": {"add": [...], "remove": [...]}, ...}
  std::vector<std::string> fp32_nodes;  // pinned FP32
  std::vector<std::string> low_nodes;   // pinned low precision (--fp16-nodes)
  bool no_out_of_range_fp32 = false;    // --no-out-of-range-fp32 (PaintOptions::out_of_range_fp32)
};
int run_inspect(const InspectOptions& o);

}  // namespace oat::cli
