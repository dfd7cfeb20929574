#include "convert/export.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "convert/value_types.h"
#include "onnx_loader/model.h"
#include "runtime/executor.h"

namespace oat::convert {

namespace {

// Why `n`, planned in `low`, is not valid ONNX at its opset ("" when it is). Each float input's
// planned type: FP32 for the slots that stay FP32, `low` for the rest; inputs read in any type
// (Shape, Cast) are not checked.
std::string schema_conflict(const Node& n, DType low, const ValueTypes& types) {
  std::map<std::string, std::pair<DType, size_t>> by_constraint;  // name -> (type, first input)
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].empty() || input_accepts_any_float(n, i)) continue;
    auto t = types.find(n.inputs[i]);
    if (t == types.end() || !is_convertible(t->second)) continue;
    const DType planned = input_stays_fp32(n, i) ? DType::F32 : low;
    const auto c = onnx_loader::input_type_constraint(n.op_type, n.domain, n.opset, i);
    if (!c) continue;
    if (std::find(c->allowed.begin(), c->allowed.end(), planned) == c->allowed.end())
      return cat("input ", i, " '", n.inputs[i], "' cannot be ", dtype_name(planned));
    auto [it, fresh] = by_constraint.emplace(c->name, std::make_pair(planned, i));
    if (!fresh && it->second.first != planned)
      return cat("inputs ", it->second.second, " and ", i, " share type ", c->name,
                 " but would be ", dtype_name(it->second.first), " and ", dtype_name(planned));
  }
  return "";
}

}  // namespace

ConvertedGraph convert_for_inference(const Graph& g, const ExportOptions& options) {
  ConvertedGraph c;
  PaintOptions paint_options = options.paint;
  const ValueTypes types = infer_value_types(g);
  for (size_t round = 0; round <= g.nodes.size(); ++round) {
    c.plan = paint(g, paint_options);
    size_t pinned = 0;
    for (const Node& n : g.nodes) {
      const NodePrecision* p = c.plan.find(n.name);
      if (!p || p->dtype == DType::F32) continue;
      const std::string why = schema_conflict(n, p->dtype, types);
      if (why.empty()) continue;
      paint_options.fp32_nodes.insert(n.name);
      c.schema_pins.push_back(cat(n.name, " (", n.op_type, ", opset ", n.opset, "): ", why));
      ++pinned;
    }
    if (pinned == 0) break;
  }
  c.graph = g;
  ApplyOptions apply;
  apply.keep_io_types = options.keep_io_types;
  apply.convert_initializers = true;
  c.report = apply_plan(c.graph, c.plan, apply);
  return c;
}

std::map<std::string, Tensor> sample_inputs(const Graph& g, int64_t batch, uint64_t seed) {
  if (batch < 1) throw Error(cat("--batch ", batch, " must be 1 or more"));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::map<std::string, Tensor> feeds;
  for (const ValueInfo& v : g.inputs) {
    if (!v.shape)
      throw Error(cat("input '", v.name,
                      "': its rank is unknown, so no sample can be made; give one with --calib"));
    Shape shape;
    for (const Dim& d : *v.shape) shape.push_back(d.fixed() ? d.value : batch);
    Tensor f(DType::F32, shape);
    float* p = f.data<float>();
    const int64_t n = f.numel();
    if (is_floating(v.dtype)) {
      for (int64_t i = 0; i < n; ++i) p[i] = normal(rng);
    } else if (is_integer(v.dtype) || v.dtype == DType::Bool) {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng() & 1);
    } else {
      throw Error(cat("input '", v.name, "' has dtype ", dtype_name(v.dtype),
                      ", which cannot be sampled; give it with --calib"));
    }
    feeds[v.name] = v.dtype == DType::F32 ? f : cast_tensor(f, v.dtype);
  }
  return feeds;
}

std::map<std::string, Tensor> adapt_feeds(const Graph& g,
                                          const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, Tensor> r = feeds;
  for (const ValueInfo& v : g.inputs) {
    auto it = r.find(v.name);
    if (it == r.end() || it->second.dtype() == v.dtype) continue;
    if (is_floating(v.dtype) && is_floating(it->second.dtype()))
      it->second = cast_tensor(it->second, v.dtype);
  }
  return r;
}

OutputDeviation deviation(const std::string& name, const Tensor& got, const Tensor& ref) {
  if (got.shape() != ref.shape())
    throw Error(cat("output '", name, "': the converted model gives shape ", shape_str(got.shape()),
                    ", the FP32 model ", shape_str(ref.shape())));
  OutputDeviation d;
  d.name = name;
  if (!is_floating(ref.dtype()) || !is_floating(got.dtype())) {
    // Integer/bool outputs (argmax, masks) must match exactly.
    const std::vector<int64_t> a = got.to_int_vector(), b = ref.to_int_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      d.max_abs = std::max(d.max_abs, static_cast<double>(std::llabs(a[i] - b[i])));
      d.max_ref = std::max(d.max_ref, static_cast<double>(std::llabs(b[i])));
    }
    d.rel = d.max_ref > 0 ? d.max_abs / d.max_ref : d.max_abs;
    return d;
  }
  const std::vector<float> y = got.to_float_vector(), r = ref.to_float_vector();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < r.size(); ++i) {
    const double diff = std::abs(static_cast<double>(y[i]) - r[i]);
    if (std::isfinite(r[i])) d.max_ref = std::max(d.max_ref, static_cast<double>(std::abs(r[i])));
    if (std::isnan(diff)) {
      // NaN on both sides, or an overflow the FP32 model also had, is agreement.
      if (!(std::isnan(y[i]) && std::isnan(r[i])) && !(y[i] == r[i])) d.max_abs = kInf;
    } else {
      d.max_abs = std::max(d.max_abs, diff);
    }
  }
  d.rel = d.max_ref > 0 ? d.max_abs / d.max_ref : d.max_abs;
  // Top-1 over the last axis: class logits [N, C] (or [N, T, C]).
  if (ref.rank() >= 2 && ref.dim(-1) > 1) {
    const int64_t c = ref.dim(-1);
    d.rows = ref.numel() / c;
    d.top1_agree = 0;
    for (int64_t row = 0; row < d.rows; ++row) {
      const float* yr = y.data() + row * c;
      const float* rr = r.data() + row * c;
      d.top1_agree += std::max_element(yr, yr + c) - yr == std::max_element(rr, rr + c) - rr;
    }
  }
  return d;
}

std::vector<OutputDeviation> compare_outputs(const Graph& fp32, const Graph& converted,
                                             const std::map<std::string, Tensor>& feeds) {
  Executor ref_exec(fp32);
  const std::vector<Tensor> ref = ref_exec.run(feeds);
  Executor low_exec(converted);
  const std::vector<Tensor> got = low_exec.run(adapt_feeds(converted, feeds));
  if (ref.size() != got.size())
    throw Error(
        cat("the converted model has ", got.size(), " outputs, the FP32 model ", ref.size()));
  std::vector<OutputDeviation> r;
  for (size_t k = 0; k < ref.size(); ++k)
    r.push_back(deviation(fp32.outputs[k].name, got[k], ref[k]));
  return r;
}

double worst_rel(const std::vector<OutputDeviation>& d) {
  double w = 0;
  for (const auto& o : d) w = std::max(w, std::isnan(o.rel) ? INFINITY : o.rel);
  return w;
}

}  // namespace oat::convert
