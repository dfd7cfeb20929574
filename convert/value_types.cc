// Value types for the converter (see value_types.h).
#include "convert/value_types.h"

#include <set>

#include "runtime/grad_type.h"
#include "runtime/onnx_type_code.h"
#include "runtime/ops.h"

namespace oat::convert {

namespace {

DType from_type_attr(const Node& n, const char* key, DType def) {
  const Attribute* a = n.attr(key);
  if (!a || a->kind != Attribute::Kind::Int) return def;
  return dtype_from_onnx_code(a->i);
}

// Constant's value: a tensor, or value_float(s) / value_int(s) / value_string(s).
DType constant_type(const Node& n) {
  if (const Attribute* a = n.attr("value"); a && a->kind == Attribute::Kind::Tensor)
    return a->t.dtype();
  if (n.has_attr("value_float") || n.has_attr("value_floats")) return DType::F32;
  if (n.has_attr("value_int") || n.has_attr("value_ints")) return DType::I64;
  if (n.has_attr("value_string") || n.has_attr("value_strings")) return DType::String;
  return DType::Undefined;
}

const std::set<std::string> kBoolOutput = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
    "And",   "Or",   "Xor",     "IsNaN",       "IsInf"};
const std::set<std::string> kInt64Output = {"Shape",  "Size",   "NonZero",
                                            "ArgMax", "ArgMin", "NonMaxSuppression"};

}  // namespace

const char* precision_name(DType t) {
  switch (t) {
    case DType::F32:
      return "fp32";
    case DType::F16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    default:
      return dtype_name(t);
  }
}

int64_t onnx_type_code(DType t) {
  const int64_t code = onnx_code_of(t);
  if (code == 0) throw Error(cat("no ONNX type code for ", dtype_name(t)));
  return code;
}

DType dtype_from_onnx_code(int64_t code) {
  return dtype_of_onnx_code(code).value_or(DType::Undefined);
}

DType cast_target(const Node& n) {
  const Attribute* a = n.attr("to");
  if (!a) return DType::Undefined;
  if (a->kind == Attribute::Kind::Int) return dtype_from_onnx_code(a->i);
  if (a->kind == Attribute::Kind::String)
    return dtype_of_onnx_name(a->s).value_or(DType::Undefined);
  return DType::Undefined;
}

bool widening_is_exact(DType from, DType to) {
  if (from == to) return true;
  switch (from) {
    case DType::Bool:
    case DType::U8:
    case DType::I8:
      return is_floating(to) || to == DType::I32 || to == DType::I64;
    case DType::F16:
    case DType::BF16:
      return to == DType::F32 || to == DType::F64;
    case DType::F32:
      return to == DType::F64;
    case DType::I16:
    case DType::U16:
      return to == DType::F32 || to == DType::F64 || to == DType::I32 || to == DType::I64;
    case DType::I32:
    case DType::U32:
      return to == DType::I64 || to == DType::F64;
    default:
      return false;
  }
}

bool has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  return false;
}

namespace {

void collect_outer_reads(const Graph& body, std::set<std::string>& reads) {
  std::set<std::string> defined;
  for (const auto& v : body.inputs) defined.insert(v.name);
  for (const auto& [name, t] : body.initializers) defined.insert(name);
  for (const Node& n : body.nodes)
    for (const auto& o : n.outputs) defined.insert(o);
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) reads.insert(name);
  };
  for (const Node& n : body.nodes) {
    for (const auto& i : n.inputs) read(i);
    for (const std::string& inner : outer_scope_reads(n)) read(inner);
  }
  for (const auto& v : body.outputs) read(v.name);
}

}  // namespace

std::vector<std::string> outer_scope_reads(const Node& n) {
  std::set<std::string> reads;
  for (const auto& [k, a] : n.attrs) {
    if (a.kind == Attribute::Kind::Graph && a.g) collect_outer_reads(*a.g, reads);
    if (a.kind == Attribute::Kind::Graphs)
      for (const auto& g : a.graphs)
        if (g) collect_outer_reads(*g, reads);
  }
  return {reads.begin(), reads.end()};
}

namespace {

// ai.onnx.ml (runtime/cpu/kernels/ml_*.cc): float32 scores and features, int64 or string labels
// and categories; the rest keep their input's type.
std::vector<DType> ml_output_types(const Node& n, DType x, std::vector<DType> out) {
  const std::string& op = n.op_type;
  auto set = [&](size_t k, DType t) {
    if (k < out.size()) out[k] = t;
  };
  auto has = [&](const char* a) { return n.attr(a) != nullptr; };
  const DType flip = x == DType::String ? DType::I64 : DType::String;  // string <-> int64 maps
  if (op == "Scaler" || op == "Normalizer" || op == "FeatureVectorizer" || op == "OneHotEncoder" ||
      op == "LinearRegressor" || op == "SVMRegressor" || op == "TreeEnsembleRegressor") {
    set(0, DType::F32);
  } else if (op == "LinearClassifier" || op == "SVMClassifier" || op == "TreeEnsembleClassifier") {
    set(0, has("classlabels_strings") ? DType::String : DType::I64);
    set(1, DType::F32);
  } else if (op == "ZipMap") {  // sequence(map(label, float)): its value type
    set(0, DType::F32);
  } else if (op == "CastMap") {
    const std::string to = n.attr_string("cast_to", "TO_FLOAT");
    set(0, to == "TO_STRING" ? DType::String : to == "TO_INT64" ? DType::I64 : DType::F32);
  } else if (op == "CategoryMapper" || (op == "LabelEncoder" && n.opset < 2)) {
    set(0, flip);
  } else if (op == "LabelEncoder") {
    set(0, has("values_strings") ? DType::String
           : has("values_floats") ? DType::F32
                                  : DType::I64);
  }
  return out;
}

}  // namespace

std::vector<DType> infer_output_types(const Node& n, const std::vector<DType>& in) {
  auto input = [&](size_t i) { return i < in.size() ? in[i] : DType::Undefined; };
  DType first = DType::Undefined;
  for (DType t : in)
    if (t != DType::Undefined) {
      first = t;
      break;
    }
  std::vector<DType> out(n.outputs.size(), first);
  auto set = [&](size_t k, DType t) {
    if (k < out.size()) out[k] = t;
  };
  const std::string& op = n.op_type;
  if (n.domain == kInternalDomain) {
    if (op == "BatchNormalizationGrad") {  // (dY, X, scale, ...) -> (dX, dScale, dBias)
      set(1, input(2));
      set(2, input(2));
    } else if (op ==
               "UnscaleAndCheck") {  // (inv_scale, G...) -> (G'... in inv_scale's type, found_inf)
      std::fill(out.begin(), out.end(), input(0));
      if (!out.empty()) out.back() = DType::Bool;
    } else if (op == "GlobalNormClip") {  // (G..., max_norm) -> (G'..., norm)
      for (size_t k = 0; k < out.size(); ++k) out[k] = input(k);
      if (!out.empty()) out.back() = input(0);
    } else if (weight_grads_in_fp32(n)) {  // grad_type = FLOAT: dW/dB (dB/dC) in float32
      for (size_t k = 0; k < out.size(); ++k)
        if (is_weight_grad_output(n, k)) out[k] = DType::F32;
    }
    return out;
  }
  if (n.domain == kMlDomain) return ml_output_types(n, input(0), std::move(out));
  if (!n.domain.empty() && n.domain != "ai.onnx") return out;
  if (op == "Cast") {
    std::fill(out.begin(), out.end(), cast_target(n));
  } else if (op == "CastLike") {
    set(0, input(1));
  } else if (kInt64Output.count(op)) {
    std::fill(out.begin(), out.end(), DType::I64);
  } else if (kBoolOutput.count(op)) {
    std::fill(out.begin(), out.end(), DType::Bool);
  } else if (op == "TopK" || op == "MaxPool") {  // values/Y, then int64 indices
    set(1, DType::I64);
  } else if (op == "Unique") {
    for (size_t k = 1; k < out.size(); ++k) out[k] = DType::I64;
  } else if (op == "Dropout") {  // (output, mask)
    set(1, DType::Bool);
  } else if (op == "Constant") {
    set(0, constant_type(n));
  } else if (op == "ConstantOfShape") {
    const Attribute* a = n.attr("value");
    set(0, a && a->kind == Attribute::Kind::Tensor ? a->t.dtype() : DType::F32);
  } else if (op == "Where") {
    set(0, input(1));
  } else if (op == "OneHot") {
    set(0, input(2));
  } else if (op == "RandomNormal" || op == "RandomUniform") {
    set(0, from_type_attr(n, "dtype", DType::F32));
  } else if (op == "TfIdfVectorizer") {  // integer token ids in, float32 counts out
    set(0, DType::F32);
  } else if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" ||
             op == "MelWeightMatrix") {  // signal generators: integer sizes in, floats out
    set(0, from_type_attr(n, "output_datatype", DType::F32));
  } else if (op == "RandomNormalLike" || op == "RandomUniformLike" || op == "EyeLike") {
    set(0, from_type_attr(n, "dtype", input(0)));
  } else if (op == "QuantizeLinear") {  // y in the zero point's type (uint8 without one)
    set(0, input(2) != DType::Undefined ? input(2) : DType::U8);
  } else if (op == "DequantizeLinear") {  // y in the scale's type
    set(0, input(1));
  } else if (op == "MatMulInteger" || op == "ConvInteger") {
    set(0, DType::I32);
  } else if (op == "DynamicQuantizeLinear") {  // (y uint8, y_scale float32, y_zero_point uint8)
    set(0, DType::U8);
    set(1, DType::F32);
    set(2, DType::U8);
  } else if (op == "QLinearMatMul" || op == "QLinearConv") {  // y in y_zero_point's type
    set(0, input(7));
  } else if (op == "Bernoulli") {
    set(0, from_type_attr(n, "dtype", input(0)));
  } else if (op == "BatchNormalization") {  // running mean/var in the mean input's type (T2)
    const DType stats = input(3) != DType::Undefined ? input(3) : input(1);
    for (size_t k = 1; k < out.size(); ++k) out[k] = stats;
  } else if (op == "LayerNormalization") {  // Mean, InvStdDev in stash_type (float32 by default)
    const DType stash = from_type_attr(n, "stash_type", DType::F32);
    for (size_t k = 1; k < out.size(); ++k) out[k] = stash;
  }
  return out;
}

ValueTypes infer_value_types(const Graph& g) {
  ValueTypes types;
  for (const auto& [name, t] : g.initializers)
    types[name] = t.defined() ? t.dtype() : DType::Undefined;
  for (const auto& v : g.inputs) types[v.name] = v.dtype;
  // Initializers with unloaded data: the declared type, when value_info has it.
  for (auto& [name, t] : types)
    if (t == DType::Undefined)
      if (const ValueInfo* vi = g.find_value_info(name)) t = vi->dtype;
  for (const Node& n : g.nodes) {
    std::vector<DType> in;
    for (const auto& i : n.inputs) {
      auto it = types.find(i);
      in.push_back(i.empty() || it == types.end() ? DType::Undefined : it->second);
    }
    const std::vector<DType> out = infer_output_types(n, in);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      const ValueInfo* vi = g.find_value_info(n.outputs[k]);
      types[n.outputs[k]] = vi && vi->dtype != DType::Undefined ? vi->dtype : out[k];
    }
  }
  return types;
}

}  // namespace oat::convert
