// The mixed-precision converter's core: op lists, the painting pass that gives every node a
// precision (with the reason), and the rewrite that applies a plan to a Graph by inserting Casts.
//
// Used by three callers: `inspect --precision` (print the plan), `convert` (FP16/BF16 inference
// models) and train (the whole training graph: a gradient node follows its forward node; loss,
// loss scaling and the optimizer are pinned to FP32).
//
// Painting (TensorFlow's auto_mixed_precision algorithm, DESIGN.md "Mixed precision"):
//   1. allow nodes are low precision (F16/BF16);
//   2. deny nodes are FP32, and deny spreads forward through infer/clear nodes until an allow node;
//      with F16, so does FP32 from infer nodes that read a constant FP16 cannot hold
//      (PaintOptions::out_of_range_fp32);
//   3. infer/clear nodes that lie between allow nodes (reachable from a low-precision node and
//      reaching one, not painted FP32 by step 2) become low precision;
//   4. remaining clear nodes join a low-precision neighbour (producer or consumer);
//   5. everything else, and every op in no list, stays FP32.
// Pins by node name (fp32_nodes / low_nodes) win over the lists; `follow` makes a node copy
// another node's final precision (gradient node -> forward node).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/graph.h"

namespace oat::convert {

enum class OpList { Allow, Deny, Infer, Clear, None };
const char* op_list_name(OpList l);  // "allow", "deny", "infer", "clear", "none"

// The four lists of ONNX op names. defaults() is DESIGN.md's table.
struct OpLists {
  std::set<std::string> allow, deny, infer, clear;

  static OpLists defaults();
  OpList list_of(const std::string& op_type) const;  // None when in no list
  // Applies a JSON override file: {"allow": {"add": [...], "remove": [...]}, "deny": {...}, ...}
  // (an op added to one list leaves the others). Throws Error naming the file and the key on a
  // malformed file or an unknown list name.
  void apply_json_file(const std::string& path);
  // Moves ops to the deny list (convert --block-ops).
  void block(const std::vector<std::string>& op_types);
};

struct PaintOptions {
  DType low = DType::F16;                // F16 or BF16
  OpLists lists = OpLists::defaults();
  std::set<std::string> fp32_nodes;      // pinned FP32 by node name (--fp32-nodes, --block-nodes)
  std::set<std::string> low_nodes;       // pinned low precision by node name (--fp16-nodes)
  std::map<std::string, std::string> follow;  // node name -> node whose precision it copies
  // Low = F16 only: an infer node that reads a float initializer or Constant whose values FP16
  // cannot hold (not all zero; max finite |x| above 65504, or, for Mul and Div, below FP16's
  // smallest normal 2^-14 = 6.1e-5) stays FP32, and FP32 spreads forward from it like deny
  // (ConvNeXt's layer scale, 1e-6). False (--no-out-of-range-fp32) paints such nodes like any
  // other.
  bool out_of_range_fp32 = true;
  // Nodes of a composite op's expansion (runtime/composite.h): node name -> (composite op type,
  // composite name). Such a node is painted by its composite's op list, and the pins name the
  // composite (e.g. --fp32-nodes lstm1 pins every node of lstm1's expansion).
  std::map<std::string, std::pair<std::string, std::string>> part_of;
};

struct NodePrecision {
  std::string node;    // node name
  std::string op_type;
  DType dtype = DType::F32;  // F32 or PaintOptions::low
  std::string reason;  // e.g. "allow list", "deny list", "follows deny node 'softmax'",
                       // "between allow nodes", "joins fp16 neighbour 'conv1'", "pinned by --fp32-nodes",
                       // "follows forward node 'conv1'", "not in any list"
  // False for nodes that read and write no F32/F16/BF16 value (shape arithmetic on int64, float64
  // math): precision does not apply to them, they are never cast, and `dtype` is F32.
  bool carries_floats = true;
};

struct PrecisionPlan {
  DType low = DType::F16;
  std::vector<NodePrecision> nodes;  // one per graph node, in graph order
  const NodePrecision* find(const std::string& node) const;  // nullptr when absent
  // Nodes painted `d` among those that carry floats (nodes without float values count in neither).
  size_t count(DType d) const;
  size_t count_without_floats() const;
  // The printable plan: one line per node (node, op, precision, reason) and the totals.
  std::string to_string() const;
};

// Paints `g` (only its top-level nodes; nodes with subgraphs (If/Loop/Scan) stay FP32 and their
// bodies are left untouched). Throws Error when a pinned or followed node name does not exist.
PrecisionPlan paint(const Graph& g, const PaintOptions& options);

// Which float inputs/outputs of a low-precision node stay FP32 (BatchNormalization's scale, B,
// mean, var and its running-statistics outputs; Resize's scales; the weight/bias gradients of
// MatMulGrad/GemmGrad/ConvGrad/ConvTransposeGrad with grad_type = 1, runtime/grad_type.h; ...). The CPU/CUDA kernels for
// F16/BF16 expect exactly this layout.
// Integer and bool inputs are never cast, whatever these say (they are not float slots).
bool input_stays_fp32(const Node& n, size_t input_index);
bool output_stays_fp32(const Node& n, size_t output_index);
// Inputs a node reads in whatever float type they arrive (Shape's and Size's data, Cast's input,
// UnscaleAndCheck's gradients): never cast, and they carry no precision between nodes.
bool input_accepts_any_float(const Node& n, size_t input_index);

struct ApplyOptions {
  bool keep_io_types = false;          // graph inputs/outputs keep FP32 (Casts at the boundary)
  bool convert_initializers = false;   // store initializers (and float Constant nodes' values)
                                       // read only in low precision as F16/BF16 (inference export);
                                       // false keeps FP32 masters + Casts (training)
  std::set<std::string> keep_fp32_values;  // values never converted (e.g. the training state)
};

// What apply_plan changed, for reports.
struct ApplyReport {
  size_t casts_inserted = 0;
  size_t casts_removed = 0;
  std::vector<std::string> converted_initializers;
  std::vector<std::string> converted_constants;  // Constant nodes whose value was stored low
  std::vector<std::string> clamped;  // "name: N values beyond FP16's range clamped to ±65504"
};

// Rewrites `g` so that each node computes in its planned precision: a Cast per (tensor, target
// type), named "<tensor>_to_fp16" / "_to_bf16" / "_to_fp32", shared by all consumers; node output
// types, value_info, graph inputs/outputs updated; then remove_redundant_casts(). Subgraphs are
// never broken: a node with a subgraph gets FP32 inputs.
ApplyReport apply_plan(Graph& g, const PrecisionPlan& plan, const ApplyOptions& options = {});

// Folds Casts that never change values: Cast to the type the value already has, and a
// widening-then-narrowing round trip (f16->f32->f16). Never folds a lossy round trip
// (f32->f16->f32). Returns the number removed.
size_t remove_redundant_casts(Graph& g);

}  // namespace oat::convert
