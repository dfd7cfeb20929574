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
};
int run_infer(const InferOptions& o);

struct InspectOptions {
  std::string model;
  bool json = false;
};
int run_inspect(const InspectOptions& o);

}  // namespace oat::cli
