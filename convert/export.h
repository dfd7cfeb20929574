// FP16/BF16 inference export (`onnx-amp-train convert`): paint a forward graph, apply the plan with
// the initializers stored in low precision, and measure how far the converted model's outputs are
// from the FP32 model's on sample inputs, with our own runtime.
//
// Deviation of one output y (converted) against r (FP32, the reference), as onnxconverter-common's
// users read it:
//   max_abs = max_i |y_i - r_i|            (y upcast to float32 first)
//   rel     = max_abs / max_i |r_i|        (relative to the largest |output|, not element-wise:
//                                           near-zero logits would make element-wise ratios huge)
// A non-finite y_i where r_i is finite (FP16 overflow) makes both infinite.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "convert/precision.h"
#include "runtime/graph.h"

namespace oat::convert {

struct ExportOptions {
  PaintOptions paint;          // low dtype, op lists, pinned nodes
  bool keep_io_types = false;  // graph inputs/outputs stay float32
};

struct ConvertedGraph {
  Graph graph;
  PrecisionPlan plan;
  ApplyReport report;
  // Nodes kept in FP32 because ONNX's schema at the model's opset cannot take the planned types,
  // with the reason: "conv1 (Conv, opset 13): input 0 'X' cannot be bfloat16".
  std::vector<std::string> schema_pins;
  size_t constants_folded = 0;  // Constant nodes turned into initializers
};

// Turns top-level Constant nodes into initializers of the same value (not those that are graph
// outputs). For inference export: apply_plan then stores the ones read in low precision as
// FP16/BF16 like any weight, instead of an FP32 Constant followed by a Cast. Returns how many.
size_t constants_to_initializers(Graph& g);

// Folds Constant nodes into initializers (above), paints, and applies the plan to the copy with
// convert_initializers = true. The result must be
// valid ONNX, so nodes whose schema (at the model's opset) rejects the planned input types are
// pinned to FP32 and the graph repainted until none is left: an input that may not be low
// precision (Conv has no bfloat16 before opset 22), or two inputs of one type constraint with
// different types (BatchNormalization before opset 15 has one T for X, scale, B, mean and var, so
// FP16 data with FP32 statistics is not expressible there).
ConvertedGraph convert_for_inference(const Graph& g, const ExportOptions& options);

// Random sample inputs for every graph input, from a fixed seed. Dimensions that are symbolic or
// unknown are bound to `batch`. Float inputs are N(0, 1) (in the input's declared dtype); integer
// and bool inputs are 0 or 1 (valid indices for any table; models that read token ids or sizes
// should get real data through --calib). Throws Error naming the input when its rank is unknown
// or its dtype cannot be sampled.
std::map<std::string, Tensor> sample_inputs(const Graph& g, int64_t batch, uint64_t seed = 0);

// `feeds` adapted to `g`'s declared input dtypes: a float feed is cast to a float16/bfloat16 input
// (a converted model without keep_io_types). Other mismatches are left for the executor to report.
std::map<std::string, Tensor> adapt_feeds(const Graph& g,
                                          const std::map<std::string, Tensor>& feeds);

struct OutputDeviation {
  std::string name;
  double max_abs = 0;  // max |y - r|
  double max_ref = 0;  // max |r|
  double rel = 0;      // max_abs / max_ref (max_abs when max_ref is 0)
  int64_t top1_agree =
      -1;  // rows (last axis = classes) with the same argmax; -1: not a 2-D+ float output
  int64_t rows = 0;
};

// Deviation of `got` from `ref`; throws Error naming the value on a shape mismatch.
OutputDeviation deviation(const std::string& name, const Tensor& got, const Tensor& ref);

// The float32 model itself fails on the inputs (not an op this build lacks: Unsupported stays
// Unsupported): a group of 0, an axis out of range, an index outside its table.
class ReferenceRunFailed : public Error {
 public:
  using Error::Error;
};

// Runs both graphs (our CPU executor) on `feeds` (given for the FP32 graph; adapted for the
// converted one) and compares every graph output, in `fp32`'s output order. Throws
// ReferenceRunFailed when the FP32 graph fails with an Error that is not Unsupported.
std::vector<OutputDeviation> compare_outputs(const Graph& fp32, const Graph& converted,
                                             const std::map<std::string, Tensor>& feeds);

// The largest rel over outputs (infinite when any is).
double worst_rel(const std::vector<OutputDeviation>& d);

}  // namespace oat::convert
