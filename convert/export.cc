#include "convert/export.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "convert/value_types.h"
#include "onnx_loader/model.h"
#include "runtime/executor.h"
#include "runtime/value_numbers.h"

namespace oat::convert {

namespace {

// Why `n`, planned in `low`, is not valid ONNX at its opset ("" when it is). Each float input's
// planned type: FP32 for the slots that stay FP32, `low` for the rest; inputs read in any type
// (Shape, Cast) are not checked.
// BatchNormalization before opset 15 has one type T for X, scale, B, mean and var. An inference
// node (one output) planned in low precision then takes its parameters in low precision too, as
// ONNX Runtime and onnxconverter-common do, instead of the FP32 slots of opset 15's T1/T2.
bool low_bn_params(const Node& n) {
  return n.op_type == "BatchNormalization" && (n.domain.empty() || n.domain == "ai.onnx") &&
         n.opset < 15 && n.outputs.size() == 1;
}

std::string schema_conflict(const Node& n, DType low, const ValueTypes& types) {
  std::map<std::string, std::pair<DType, size_t>> by_constraint;  // name -> (type, first input)
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].empty() || input_accepts_any_float(n, i)) continue;
    auto t = types.find(n.inputs[i]);
    if (t == types.end() || !is_convertible(t->second)) continue;
    const DType planned = input_stays_fp32(n, i) && !low_bn_params(n) ? DType::F32 : low;
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

// A Constant node's value as a tensor (value, value_float(s), value_int(s)); undefined for the
// forms an initializer cannot hold (sparse_value, strings).
Tensor constant_value(const Node& n) {
  const Attribute* a = nullptr;
  if ((a = n.attr("value")) && a->kind == Attribute::Kind::Tensor) return a->t;
  if ((a = n.attr("value_float")) && a->kind == Attribute::Kind::Float)
    return Tensor::scalar<float>(a->f);
  if ((a = n.attr("value_int")) && a->kind == Attribute::Kind::Int)
    return Tensor::scalar<int64_t>(a->i);
  if ((a = n.attr("value_floats")) && a->kind == Attribute::Kind::Floats)
    return Tensor::from_vector<float>({static_cast<int64_t>(a->floats.size())}, a->floats);
  if ((a = n.attr("value_ints")) && a->kind == Attribute::Kind::Ints)
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(a->ints.size())}, a->ints);
  return Tensor();
}

}  // namespace

namespace {

// A pinned node name that constants_to_initializers removed (a Constant).
bool folded_away(const Graph& folded, const Graph& original, const std::string& name) {
  for (const Node& n : folded.nodes)
    if (n.name == name) return false;
  for (const Node& n : original.nodes)
    if (n.name == name) return true;
  return false;  // unknown everywhere: paint reports it
}

}  // namespace

namespace {

// After apply_plan: the parameters of low-precision low_bn_params() nodes in `low`. An FP32
// initializer read only by such slots is stored in `low` (values beyond FP16's range clamped,
// as apply_plan does for weights); anything else gets a Cast "<value>_to_fp16" before the node.
void lower_bn_params(Graph& g, const PrecisionPlan& plan, ApplyReport& report) {
  const DType low = plan.low;
  std::map<std::string, int> other_reads;  // reads outside the BN parameter slots
  std::vector<const Node*> bns;
  for (const Node& n : g.nodes) {
    const NodePrecision* p = plan.find(n.name);
    const bool lowered = p && p->dtype == low && low_bn_params(n);
    if (lowered) bns.push_back(&n);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!lowered || i == 0) ++other_reads[n.inputs[i]];
  }
  for (const auto& o : g.outputs) ++other_reads[o.name];
  std::set<std::string> bn_names;
  for (const Node* n : bns) bn_names.insert(n->name);
  std::map<std::string, std::string> cast_of;  // value -> its low-precision Cast output
  // Every name in use: a Cast that apply_plan already placed for another reader of v (an
  // Identity of a BN parameter, as torch writes) is named "<v>_to_fp16" too.
  std::set<std::string> taken;
  for (const Node& n : g.nodes) {
    taken.insert(n.name);
    taken.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& v : g.inputs) taken.insert(v.name);
  std::vector<Node> nodes;
  for (Node& n : g.nodes) {
    if (bn_names.count(n.name)) {
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const std::string v = n.inputs[i];
        if (v.empty()) continue;
        auto init = g.initializers.find(v);
        if (init != g.initializers.end() && init->second.dtype() == DType::F32 &&
            !other_reads.count(v)) {
          std::vector<float> x = init->second.to_float_vector();
          size_t clamped = 0;
          const float lim = low == DType::F16 ? 65504.0f : 3.38e38f;
          for (float& f : x)
            if (std::abs(f) > lim) f = std::copysign(lim, f), ++clamped;
          init->second = cast_tensor(Tensor::from_vector<float>(init->second.shape(), x), low);
          report.converted_initializers.push_back(v);
          if (clamped)
            report.clamped.push_back(
                cat(v, ": ", clamped, " values beyond FP16's range clamped to ±65504"));
          continue;
        }
        if (init != g.initializers.end() && init->second.dtype() == low) continue;
        auto [it, fresh] = cast_of.emplace(v, cat(v, "_to_", low == DType::F16 ? "fp16" : "bf16"));
        if (fresh) {
          while (g.initializers.count(it->second) || g.value_info.count(it->second) ||
                 taken.count(it->second))
            it->second += "_";
          taken.insert(it->second);
          Node c;
          c.name = it->second;
          c.op_type = "Cast";
          c.op = OpId::Cast;
          c.opset = n.opset;
          Attribute to;
          to.kind = Attribute::Kind::Int;
          to.i = onnx_type_code(low);
          c.attrs["to"] = to;
          c.inputs = {v};
          c.outputs = {it->second};
          nodes.push_back(std::move(c));
          ++report.casts_inserted;
        }
        n.inputs[i] = it->second;
      }
    }
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
}

}  // namespace

size_t constants_to_initializers(Graph& g) {
  std::set<std::string> outputs;
  for (const auto& o : g.outputs) outputs.insert(o.name);
  std::vector<Node> kept;
  size_t moved = 0;
  for (Node& n : g.nodes) {
    if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1 &&
        !outputs.count(n.outputs[0]) && !g.initializers.count(n.outputs[0])) {
      Tensor t = constant_value(n);
      if (t.defined()) {
        g.initializers[n.outputs[0]] = t;
        ++moved;
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return moved;
}

ConvertedGraph convert_for_inference(const Graph& g, const ExportOptions& options) {
  ConvertedGraph c;
  Graph folded = g;
  c.constants_folded = constants_to_initializers(folded);
  PaintOptions paint_options = options.paint;
  for (auto it = paint_options.fp32_nodes.begin(); it != paint_options.fp32_nodes.end();)
    it = folded_away(folded, g, *it) ? paint_options.fp32_nodes.erase(it) : std::next(it);
  for (auto it = paint_options.low_nodes.begin(); it != paint_options.low_nodes.end();)
    it = folded_away(folded, g, *it) ? paint_options.low_nodes.erase(it) : std::next(it);
  const ValueTypes types = infer_value_types(folded);
  for (size_t round = 0; round <= folded.nodes.size(); ++round) {
    c.plan = paint(folded, paint_options);
    size_t pinned = 0;
    for (const Node& n : folded.nodes) {
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
  c.graph = std::move(folded);
  ApplyOptions apply;
  apply.keep_io_types = options.keep_io_types;
  apply.convert_initializers = true;
  c.report = apply_plan(c.graph, c.plan, apply);
  lower_bn_params(c.graph, c.plan, c.report);
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
  if (!got.is_tensor() || !ref.is_tensor()) {
    // A sequence of maps (ZipMap's) or a map: the keys must be the FP32 model's, exactly; the
    // values deviate as numbers (no top-1: a map has no class axis).
    const Tensor g = flat_values(got), r = flat_values(ref);
    OutputDeviation d;
    if (!same_keys(got, ref) || !g.defined() || !r.defined() || g.numel() != r.numel()) {
      d.name = name;
      d.max_abs = d.rel = std::numeric_limits<double>::infinity();
      return d;
    }
    d = deviation(name, g, r);
    return d;
  }
  if (got.shape() != ref.shape())
    throw Error(cat("output '", name, "': the converted model gives shape ", shape_str(got.shape()),
                    ", the FP32 model ", shape_str(ref.shape())));
  OutputDeviation d;
  d.name = name;
  if (ref.dtype() == DType::String || got.dtype() == DType::String) {
    // String outputs (labels) must match exactly: any difference is an infinite deviation.
    bool same = got.dtype() == ref.dtype();
    for (int64_t i = 0; same && i < ref.numel(); ++i)
      same = got.data<std::string>()[i] == ref.data<std::string>()[i];
    d.max_abs = d.rel = same ? 0.0 : std::numeric_limits<double>::infinity();
    return d;
  }
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
  std::vector<Tensor> ref;
  try {
    Executor ref_exec(fp32);
    ref = ref_exec.run(feeds);
  } catch (const Unsupported&) {
    throw;
  } catch (const Error& e) {
    throw ReferenceRunFailed(cat("the float32 model fails on these inputs: ", e.what()));
  }
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
