// Executor: runs a Graph node by node with kernels from the registry.
//
// Values live in integer slots resolved once at construction. Each intermediate is released right
// after its last consumer runs (liveness-based freeing), so peak memory is the live set, not the
// whole graph. Kernels are created lazily per node and dtype, because the dtype key is only known
// once actual inputs arrive (shapes are taken from the tensors at run time, so a model exported
// with batch 1 runs with any batch its graph allows).
//
// On a device (ExecutorOptions::device = CUDA) feeds and floating constants are uploaded, integer
// constants stay on the host for shape arithmetic, each node runs where its DeviceContext places
// it, and run() returns host tensors (the observer also sees host copies).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/composite.h"
#include "runtime/graph.h"
#include "runtime/registry.h"

namespace oat {

struct ExecutorOptions {
  Device device = Device::CPU;
  const KernelRegistry* registry = nullptr;  // default_registry() when null
};

class Executor {
 public:
  explicit Executor(const Graph& graph, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs the graph; returns the graph outputs in declaration order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds);
  // Runs the graph and returns the named values (graph outputs or intermediates).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds,
                                    const std::vector<std::string>& fetch);

  // As run(feeds, fetch), but the fetched values stay where they were computed (device tensors
  // on a device executor: nothing is downloaded and the host does not wait for the device).
  // Feeds may be device tensors of this executor's device (the Trainer keeps its state there).
  // `donated` names feeds the caller gives away (JAX's donate_argnums): a kernel that can
  // compute in place (the optimizer updates) may write its output into a donated feed's storage
  // where no later node reads that feed and it is not fetched, so the feed's tensor then holds
  // the new value (the Trainer donates the state its update nodes replace).
  std::map<std::string, Tensor> run_resident(const std::map<std::string, Tensor>& feeds,
                                             const std::vector<std::string>& fetch,
                                             const std::set<std::string>& donated = {});

  // The device state (stream, handles, capture) of a device executor; nullptr on the CPU.
  DeviceContext* device_context() const { return device_ctx_.get(); }

  // Called after every node with the node and its outputs (for `check` and debugging).
  using NodeObserver = std::function<void(const Node&, const std::vector<Tensor>&)>;
  void set_observer(NodeObserver obs) { observer_ = std::move(obs); }

  const Graph& graph() const { return graph_; }

  // How many values the run-time constant folding holds: outputs of nodes computed from
  // initializers and Constants alone that a computed node reads (see Step::foldable in
  // executor.cc; CPU executors without an observer). For tests and diagnostics.
  size_t folded_values() const;

  // Memory of the last run: the peak, over the run, of the bytes held by values that its nodes
  // computed (each storage counted once; storage shared with a feed or an initializer, as
  // Reshape or Identity outputs share it, is not counted), measured after every node, when its
  // inputs and outputs are both held. Reset at the start of each run. With a filter, only values
  // whose name it accepts count (e.g. activations but not the optimizer's outputs).
  size_t peak_bytes() const { return peak_bytes_; }
  void set_bytes_filter(std::function<bool(const std::string& value)> filter);

  // Checks feeds against the declared graph inputs: every input present, no unknown names, dtype
  // equal, rank equal, fixed dimensions equal except the first (the batch). Throws Error naming
  // the input, the expected and the actual type/shape.
  void validate_feeds(const std::map<std::string, Tensor>& feeds) const;

 private:
  struct Step;
  int slot_of(const std::string& name) const;
  std::map<std::string, Tensor> run_impl(const std::map<std::string, Tensor>& feeds,
                                         const std::vector<std::string>& fetch, bool to_host,
                                         const std::set<std::string>& donated = {});

  // Expansion node name -> its composite (Einsum, LSTM, ScatterND, ...), for errors: a failing
  // expansion node is reported as its composite, the node the user's model has.
  std::map<std::string, CompositeOrigin> composite_parts_;
  std::unique_ptr<const Graph> lowered_;  // the graph with its composite ops expanded, when it has any
  const Graph& graph_;                    // what runs: *lowered_ or the caller's graph
  ExecutorOptions options_;
  const KernelRegistry* registry_;
  std::unique_ptr<DeviceContext> device_ctx_;  // stream and handles of a device executor
  std::map<std::string, int> slots_;
  std::vector<Tensor> constants_;   // initializer values by slot (undefined for others)
  std::vector<Tensor> device_constants_;  // on a device: floating constants uploaded once
  std::vector<Step> steps_;
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<int> last_use_;  // by slot: the last step reading it (-1: none)
  std::vector<std::vector<int>> consumers_;  // by slot: the steps reading it
  NodeObserver observer_;
  std::vector<char> counted_;  // by slot: whether peak_bytes() counts the value (empty = all)
  size_t peak_bytes_ = 0;
};

// Every node whose op this build cannot run on `device`: (node description, reason).
std::vector<std::pair<std::string, std::string>> unsupported_nodes(const Graph& graph,
                                                                   Device device,
                                                                   const KernelRegistry& reg);

}  // namespace oat
