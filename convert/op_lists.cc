// The default op lists (DESIGN.md, "Mixed precision: what correct means") and their overrides.
#include <fstream>

#include <nlohmann/json.hpp>

#include "convert/precision.h"
#include "runtime/error.h"

namespace oat::convert {

const char* op_list_name(OpList l) {
  switch (l) {
    case OpList::Allow: return "allow";
    case OpList::Deny: return "deny";
    case OpList::Infer: return "infer";
    case OpList::Clear: return "clear";
    case OpList::None: return "none";
  }
  return "none";
}

OpLists OpLists::defaults() {
  OpLists l;
  // FP16 compute with FP32 accumulation: the tensor-core ops.
  l.allow = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum", "LSTM", "GRU", "RNN"};
  // Always FP32: range-sensitive math, reductions, normalisations, losses. Tan, Sinh and Cosh
  // are here for Exp's reason (their results leave FP16's range: cosh x > 65504 once |x| > 11.8,
  // tan x near ±π/2), Atanh for Log's (a pole: FP16 rounds 1 − 2⁻¹² to 1, giving ±inf). Resize
  // and Upsample as in onnxconverter-common's block list (ONNX Runtime's CPU provider has no
  // float16 Resize). GridSample for the same reason (it interpolates as Resize; ONNX Runtime's CPU
  // GridSample has float and double kernels only), and its unnormalised coordinates need more
  // than FP16's 11 bits (spacing 0.25 from 512 on). LRN and MeanVarianceNormalization are
  // normalisations (a Pow, a variance). The quantization ops divide by a scale and round to an
  // integer grid (FP16 would move values across rounding boundaries; ONNX up to opset 18 defines
  // them on float32 only), so fake quantization (QuantizeLinear -> DequantizeLinear) runs FP32
  // and its output is cast for the FP16 Conv/MatMul after it. DFT and STFT are sums of L terms
  // (a spectrum's DC bin is the frame's sum, a power spectrum its square), as ReduceSum.
  l.deny = {"Exp", "Log", "Pow", "Reciprocal", "Softplus", "Softmax", "LogSoftmax", "Tan", "Sinh",
            "Cosh", "Atanh",
            "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss", "ReduceSum", "ReduceMean",
            "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
            "ReduceLogSumExp", "ReduceSumSquare", "CumSum", "LayerNormalization",
            "GroupNormalization", "InstanceNormalization", "LpNormalization", "Range", "TopK",
            "Resize", "Upsample", "GridSample", "LRN", "MeanVarianceNormalization",
            "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul",
            "QLinearConv", "DFT", "STFT"};
  // Run in the precision their inputs arrive in (the widest wins). Beyond DESIGN.md's table: Mean
  // (as Sum), Shrink (piecewise linear, as Clip), and the inverse functions whose results stay
  // small: Asin, Acos, Atan (bounded), Asinh, Acosh (logarithmic growth) -- sensitive only near
  // the ends of their domains, as Sqrt near 0.
  l.infer = {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Sigmoid", "Tanh", "LeakyRelu",
             "Elu", "Gelu", "Erf", "Sqrt", "Clip", "Where", "Neg", "Abs", "AveragePool",
             "GlobalAveragePool", "BatchNormalization", "Dropout", "Mean", "Shrink", "Asin",
             "Acos", "Atan", "Asinh", "Acosh"};
  // Move data without changing values (Trilu: beyond DESIGN.md's table, it keeps or zeroes; the
  // index-driven composites: GatherND, ReverseSequence, the scatters, whose reduction add sums in
  // FP32 before one rounding, and OneHot, which picks one of `values` per element, as Gather).
  l.clear = {"Relu", "MaxPool", "Reshape", "Flatten", "Transpose", "Concat", "Split", "Slice",
             "Gather", "Squeeze", "Unsqueeze", "Identity", "Pad", "Expand", "Tile", "Shape",
             "Trilu", "GatherND", "ScatterElements", "Scatter", "ScatterND", "ReverseSequence",
             "OneHot"};
  return l;
}

OpList OpLists::list_of(const std::string& op) const {
  if (allow.count(op)) return OpList::Allow;
  if (deny.count(op)) return OpList::Deny;
  if (infer.count(op)) return OpList::Infer;
  if (clear.count(op)) return OpList::Clear;
  return OpList::None;
}

void OpLists::block(const std::vector<std::string>& ops) {
  for (const auto& op : ops) {
    allow.erase(op), infer.erase(op), clear.erase(op);
    deny.insert(op);
  }
}

void OpLists::apply_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(cat("op lists file '", path, "': cannot open it"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(cat("op lists file '", path, "': not valid JSON (", e.what(), ")"));
  }
  if (!j.is_object()) throw Error(cat("op lists file '", path, "': expected a JSON object"));
  std::map<std::string, std::set<std::string>*> lists = {
      {"allow", &allow}, {"deny", &deny}, {"infer", &infer}, {"clear", &clear}};
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto l = lists.find(it.key());
    if (l == lists.end())
      throw Error(cat("op lists file '", path, "': unknown list '", it.key(),
                      "' (expected allow, deny, infer or clear)"));
    if (!it.value().is_object())
      throw Error(cat("op lists file '", path, "': '", it.key(),
                      "' must be an object with \"add\" and/or \"remove\" arrays"));
    for (auto op = it.value().begin(); op != it.value().end(); ++op) {
      if (op.key() != "add" && op.key() != "remove")
        throw Error(cat("op lists file '", path, "': '", it.key(), ".", op.key(),
                        "' is not \"add\" or \"remove\""));
      if (!op.value().is_array())
        throw Error(cat("op lists file '", path, "': '", it.key(), ".", op.key(),
                        "' must be an array of op names"));
      for (const auto& name : op.value()) {
        if (!name.is_string())
          throw Error(cat("op lists file '", path, "': '", it.key(), ".", op.key(),
                          "' holds a non-string entry"));
        const std::string s = name.get<std::string>();
        if (op.key() == "add") {
          for (auto& other : lists) other.second->erase(s);
          l->second->insert(s);
        } else {
          l->second->erase(s);
        }
      }
    }
  }
}

}  // namespace oat::convert
