// oat_op_profile: where the CPU time of one inference goes, per op type and per node.
//
//   oat_op_profile MODEL INPUT(.npy|.pb) [--threads N] [--repeat R] [--top K]
//
// Uses the Executor's per-node observer (no change to the executor): a node's time is the wall
// time from the previous node's observer call to its own, so it includes the kernel and the
// freeing of values whose last use was the previous node. One warm-up run (kernel creation,
// first-touch allocation) is excluded; the numbers are the mean of R runs.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "runtime/host_allocator.h"
#include "runtime/threads.h"

namespace {

using Clock = std::chrono::steady_clock;

struct OpStat {
  double ms = 0;
  int nodes = 0;
};

int usage() {
  std::cerr << "usage: oat_op_profile MODEL INPUT(.npy|.pb) [--threads N] [--repeat R] [--top K]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  oat::use_default_openmp_waiting(argv);  // as the CLI waits (runtime/threads.h)
  if (argc < 3) return usage();
  const std::string model_path = argv[1], input_path = argv[2];
  int threads = 0, repeat = 5, top = 15;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--top"))
      top = std::atoi(argv[i + 1]);
    else
      return usage();
  }
  try {
    oat::set_num_threads(threads);
    oat::onnx_loader::Model model = oat::onnx_loader::load_model(model_path);
    oat::Executor exec(model.graph);
    const std::map<std::string, oat::Tensor> feeds = {
        {model.graph.inputs.at(0).name, oat::onnx_loader::read_tensor_file(input_path).tensor}};
    exec.run(feeds);  // warm-up

    // Indexed by the observer's call number (= the executor's step order) so nothing depends on
    // where the executor keeps its nodes.
    std::vector<const oat::Node*> nodes;
    std::vector<double> node_ms;
    size_t call = 0;
    Clock::time_point last;
    exec.set_observer([&](const oat::Node& node, const std::vector<oat::Tensor>&) {
      const Clock::time_point now = Clock::now();
      if (call == nodes.size()) nodes.push_back(&node), node_ms.push_back(0.0);
      node_ms[call++] += std::chrono::duration<double, std::milli>(now - last).count();
      last = now;
    });
    double total_ms = 0;
    const oat::HostCacheStats cache0 = oat::host_cache_stats();
    for (int r = 0; r < repeat; ++r) {
      call = 0;
      const Clock::time_point t0 = Clock::now();
      last = t0;
      exec.run(feeds);
      total_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
    total_ms /= repeat;
    for (double& t : node_ms) t /= repeat;
    const size_t n = nodes.size();

    std::map<std::string, OpStat> by_op;
    for (size_t i = 0; i < n; ++i) {
      by_op[nodes[i]->op_type].ms += node_ms[i];
      by_op[nodes[i]->op_type].nodes++;
    }
    std::vector<std::pair<std::string, OpStat>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    std::cout << std::fixed << std::setprecision(2) << model_path << ": " << total_ms
              << " ms per run (mean of " << repeat << ", " << oat::num_threads() << " threads)\n";
    const oat::HostCacheStats cache1 = oat::host_cache_stats();
    std::cout << "host memory cache (runtime/host_allocator.h) over the timed runs: "
              << cache1.hits - cache0.hits << " hits, " << cache1.misses - cache0.misses
              << " misses\n\nper op type        ms     %  nodes\n";
    for (const auto& [op, s] : ops)
      std::cout << "  " << std::left << std::setw(20) << op << std::right << std::setw(9) << s.ms
                << std::setw(6) << std::setprecision(1) << 100.0 * s.ms / total_ms
                << std::setprecision(2) << std::setw(7) << s.nodes << "\n";

    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
    std::cout << "\nslowest nodes (ms, output shape)\n";
    for (int k = 0; k < top && k < static_cast<int>(n); ++k) {
      const oat::Node& node = *nodes[order[k]];
      const oat::ValueInfo* vi =
          node.outputs.empty() ? nullptr : model.graph.find_value_info(node.outputs[0]);
      std::cout << "  " << std::setw(9) << node_ms[order[k]] << "  " << node.describe() << "  "
                << (vi ? vi->shape_string() : "?") << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
