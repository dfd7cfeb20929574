// `convert --auto --rtol R`: a small set of nodes to keep in FP32 so that every output of the
// converted model stays within R of the FP32 model's (rel = max|y - r| / max|r|, export.h).
//
// The search follows the error through the graph, not the node order:
//   1. Run the FP32 graph once and keep every node's outputs (the reference).
//   2. Convert with the current pins, run it, and measure every value's deviation
//        d(v) = max|v_low - v_ref| / max|v_ref|.
//      A node's own contribution is how much it adds to what arrives:
//        gain(n) = max_out d(out) - max_in d(in)
//      (an overflow to Inf from finite inputs is an infinite gain). The node with the largest gain
//      among those still in low precision (clear-list ops excluded: they move data without
//      rounding it) is pinned to FP32 and the graph re-converted and re-run. The pin is kept when
//      it removed an overflow born in the node (infinite gain) or made the worst output better;
//      otherwise it is undone and the node not tried again (FP16 rounding noise is not monotone:
//      pinning one node of many can make an output worse). Repeat from 2 until the outputs are
//      within R, no candidate is left, or max_pins / max_evaluations is reached.
//   3. Prune: try un-pinning each chosen node (the smallest gain at its pinning first) and keep it
//      un-pinned when the outputs stay within R, so the set is minimal with respect to removal.
// Each step costs one conversion and one run of the converted graph on the sample feeds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "convert/export.h"

namespace oat::convert {

struct AutoSearchOptions {
  double rtol = 1e-2;
  size_t max_pins = 64;          // give up (met = false) after pinning this many nodes
  size_t max_evaluations = 200;  // or after this many conversions
};

struct AutoSearchStep {
  std::string node;  // pinned (or, in the prune phase, un-pinned) node
  std::string op_type;
  double gain = 0;       // its gain when it was chosen
  double worst_rel = 0;  // the outputs' worst rel after the step
  bool pruned = false;   // an un-pin that was kept
};

struct AutoSearchResult {
  std::vector<std::string> fp32_nodes;     // the chosen nodes (besides options.paint.fp32_nodes)
  std::vector<OutputDeviation> deviation;  // of the final conversion
  double initial_worst_rel = 0;            // before any pin
  bool met = false;                        // every output within rtol
  std::vector<AutoSearchStep> steps;       // kept pins and kept un-pins, in order
  size_t rejected = 0;                     // pins tried and undone (no improvement)
  size_t evaluations = 0;
};

// `feeds` are for the FP32 graph `g`. The returned pins, added to base.paint.fp32_nodes, give
// the conversion whose deviation is reported.
AutoSearchResult auto_search(const Graph& g, const std::map<std::string, Tensor>& feeds,
                             const ExportOptions& base, const AutoSearchOptions& options);

}  // namespace oat::convert
