// "Every backend agrees with the CPU reference" (ggml's test-backend-ops): one table of small op
// cases; each runs through the CPU executor and, where a CUDA device answers, through the CUDA
// executor, in every dtype the case lists (float inputs are rounded to that dtype on the host, so
// both backends see the same values), and the outputs are compared within the dtype's tolerance:
// |cuda − cpu| ≤ atol + rtol·|cpu|. Bool and integer outputs must be equal.
// The CPU half runs everywhere (so the table itself is checked on every machine); the CUDA half
// says SKIPPED once when no device answers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "runtime/composite.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_f;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_s;

namespace {

// How one input is made.
struct In {
  enum Kind { Float, Positive, Unit, NegUnit, Huge, Ints, Bools, True, Values, Absent };
  In(Kind k, Shape s) : kind(k), shape(std::move(s)) {}
  Kind kind = Float;
  Shape shape;
  std::vector<int64_t> ints;  // Ints: the values (shape = {size} unless given)
  std::vector<float> values;  // Values: the float values (ties, zeros, Y = reduce(X))
  bool keep_f32 = false;      // stays F32 whatever the case dtype (BN statistics, lr, masters)
  DType int_type = DType::I64;
};
In flt(Shape s) { return In{In::Float, std::move(s)}; }
In absent() { return In{In::Absent, {}}; }  // an optional input left out ("")
In pos(Shape s) { return In{In::Positive, std::move(s)}; }
In f32(Shape s, In::Kind k = In::Float) {
  In i{k, std::move(s)};
  i.keep_f32 = true;
  return i;
}
In ints(std::vector<int64_t> v, Shape s = {}) {
  In i{In::Ints, s.empty() ? Shape{static_cast<int64_t>(v.size())} : std::move(s)};
  i.ints = std::move(v);
  return i;
}
In bools(Shape s) { return In{In::Bools, std::move(s)}; }
// Given float values (exact in F16 and BF16 where a case needs exact ties or zeros).
In vals(Shape s, std::vector<float> v) {
  In i{In::Values, std::move(s)};
  i.values = std::move(v);
  return i;
}
In all_true(Shape s) { return In{In::True, std::move(s)}; }
// n evenly spaced values in [lo, hi], for ops with a domain (Asin, Acosh) or poles (Tan).
In spread(int64_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<float>(i) / (n - 1);
  return vals({n}, std::move(v));
}
In huge(Shape s) { return In{In::Huge, std::move(s)}; }

struct Case {
  Case(std::string op_, int64_t opset_, std::map<std::string, Attribute> attrs_,
       std::vector<In> inputs_, int outputs_ = 1,
       std::vector<DType> dtypes_ = {DType::F32, DType::F16, DType::BF16}, std::string label_ = "")
      : op(std::move(op_)),
        opset(opset_),
        attrs(std::move(attrs_)),
        inputs(std::move(inputs_)),
        outputs(outputs_),
        dtypes(std::move(dtypes_)),
        label(std::move(label_)) {}
  std::string op;
  int64_t opset;
  std::map<std::string, Attribute> attrs;
  std::vector<In> inputs;
  int outputs;
  std::vector<DType> dtypes;
  std::string label;
  // The graph inputs' shapes in value_info (composite expansions read them; without, Einsum's
  // reshape targets come from Shape/ReduceProd/Concat at run time).
  bool declare_shapes = true;
};

// Deterministic values: a fixed LCG per (case, input).
struct Lcg {
  uint64_t s;
  float next() {  // [0, 1)
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((s >> 40) & 0xffffff) / 16777216.0f;
  }
};

Tensor make_input(const In& in, DType dt, uint64_t seed) {
  Lcg g{seed};
  switch (in.kind) {
    case In::Absent:
      return Tensor();
    case In::Ints: {
      Tensor t = Tensor::from_vector<int64_t>(in.shape, in.ints);
      return in.int_type == DType::I64 ? t : cast_tensor(t, in.int_type);
    }
    case In::Bools:
    case In::True: {
      Tensor t(DType::Bool, in.shape);
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<bool>()[i] = in.kind == In::True || g.next() < 0.5f;
      return t;
    }
    default: break;
  }
  if (in.kind == In::Values) {
    const Tensor t = Tensor::from_vector<float>(in.shape, in.values);
    return in.keep_f32 ? t : cast_tensor(t, dt);
  }
  Tensor t(DType::F32, in.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float u = g.next();
    t.data<float>()[i] = in.kind == In::Positive ? 0.25f + 2.f * u
                         : in.kind == In::Unit    ? u
                         : in.kind == In::NegUnit ? -0.25f - u
                         : in.kind == In::Huge    ? 1e30f * (u + 0.5f)
                                                  : 6.f * u - 3.f;
  }
  return in.keep_f32 ? t : cast_tensor(t, dt);
}

Graph single_node_graph(const Case& c, const std::vector<Tensor>& inputs) {
  Graph g;
  g.opsets[""] = c.opset;
  Node n;
  n.name = "n0";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.opset = c.opset;
  if (n.op == OpId::Unknown && !is_composite(n)) throw Error("unknown op " + c.op);
  const bool internal = n.op != OpId::Unknown &&
                        static_cast<int>(n.op) >= static_cast<int>(OpId::SumToShape);
  n.domain = internal ? kInternalDomain : "";
  n.attrs = c.attrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    n.inputs.push_back("in" + std::to_string(i));
    std::optional<std::vector<Dim>> dims;  // composite ops' expansions read ranks and sizes here
    if (c.declare_shapes) {
      dims.emplace();
      for (int64_t d : inputs[i].shape()) dims->push_back(Dim{d, ""});
    }
    g.inputs.push_back(ValueInfo{n.inputs.back(), inputs[i].dtype(), dims});
  }
  for (int o = 0; o < c.outputs; ++o) {
    n.outputs.push_back("out" + std::to_string(o));
    g.outputs.push_back(ValueInfo{n.outputs.back(), DType::Undefined, std::nullopt});
  }
  g.nodes.push_back(n);
  return g;
}

std::vector<Tensor> run_on(Device d, const Graph& g, const std::vector<Tensor>& inputs) {
  ExecutorOptions o;
  o.device = d;
  Executor ex(g, o);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    Tensor t = inputs[i];
    // On CUDA, float and bool inputs start on the device, so that every case runs its CUDA
    // kernel (the executor would keep host scalars and integers on the host); integer inputs
    // (shapes, axes, targets) stay where a model's constants would be.
    if (d == Device::CUDA && (is_floating(t.dtype()) || t.dtype() == DType::Bool)) {
      Tensor dev(t.dtype(), t.shape(), Device::CUDA);
      cuda::copy_bytes(dev.raw_data(), true, t.raw_data(), false, t.nbytes());
      t = dev;
    }
    feeds["in" + std::to_string(i)] = t;
  }
  return ex.run(feeds);
}

void tolerance(DType t, double& atol, double& rtol) {
  switch (t) {
    case DType::F16: atol = 5e-3, rtol = 5e-3; break;
    case DType::BF16: atol = 3e-2, rtol = 2e-2; break;
    default: atol = 1e-4, rtol = 1e-4; break;
  }
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> v;
    // elementwise binary with broadcasting
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
      v.push_back({op, 17, {}, {flt({2, 3, 4}), flt({3, 1})}});
    v.push_back({"Div", 17, {}, {flt({2, 3, 4}), pos({4})}});
    v.push_back({"Pow", 17, {}, {pos({3, 4}), flt({1})}});
    v.push_back({"PRelu", 16, {}, {flt({2, 3, 4, 5}), flt({3, 1, 1})}});
    // Before opset 7 a [C] slope is per channel (axis 1), not numpy-broadcast along W.
    v.push_back({"PRelu", 6, {}, {flt({2, 3, 4, 5}), flt({3})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "legacy slope"});
    // NaN stays NaN through Max, Min, Relu and Clip, as on the CPU.
    const float nan = std::nanf("");
    for (const char* op : {"Max", "Min"})
      v.push_back({op, 13, {}, {vals({4}, {nan, 1.f, 2.f, nan}), vals({4}, {1.f, nan, 3.f, nan})},
                   1, {DType::F32, DType::F16, DType::BF16}, "NaN"});
    v.push_back({"Relu", 14, {}, {vals({4}, {nan, -1.f, 0.f, 2.f})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "NaN"});
    v.push_back({"Clip", 13, {}, {vals({4}, {nan, -5.f, 0.5f, 5.f}), vals({}, {-1.f}),
                                   vals({}, {1.f})}, 1, {DType::F32, DType::F16, DType::BF16},
                 "NaN"});
    v.push_back({"Sum", 13, {}, {flt({2, 3}), flt({3}), flt({1})}});
    v.push_back({"Mean", 13, {}, {flt({2, 3}), flt({3}), flt({1})}});
    v.push_back({"Mean", 13, {}, {flt({2, 3})}, 1, {DType::F32, DType::F16, DType::BF16},
                 "one input"});
    v.push_back({"Add", 17, {}, {flt({64, 65}), flt({64, 65})}, 1, {DType::F32}, "same shape"});
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
      v.push_back({op, 16, {}, {flt({4, 5}), flt({5})}});
    v.push_back({"Where", 16, {}, {bools({2, 3}), flt({2, 3}), flt({3})}});
    v.push_back({"Mod", 13, {{"fmod", attr_i(1)}}, {flt({3, 4}), pos({4})}});
    v.push_back({"IsNaN", 13, {}, {flt({3, 4})}});
    v.push_back({"IsInf", 10, {}, {huge({3, 4})}});
    v.push_back({"Not", 1, {}, {bools({3, 4})}, 1, {DType::Bool}});
    // Dropout: inference (Y = X, mask all true), and training, where both backends draw the same
    // mask (numpy's MT19937 stream from the seed; the CUDA kernel draws it in a host function).
    // Before opset 10 the mask is in X's dtype; opset 6 trains when is_test = 0.
    v.push_back({"Dropout", 13, {}, {flt({3, 5})}, 2, {DType::F32, DType::F16, DType::BF16},
                 "inference"});
    v.push_back({"Dropout", 7, {}, {flt({3, 5})}, 2, {DType::F32, DType::F16, DType::BF16},
                 "inference, opset 7 (mask in X's dtype)"});
    {
      In ratio = vals({}, {0.3f});
      ratio.keep_f32 = true;
      v.push_back({"Dropout", 13, {{"seed", attr_i(7)}}, {flt({4, 33}), ratio, all_true({})}, 2,
                   {DType::F32, DType::F16, DType::BF16}, "training"});
    }
    v.push_back({"Dropout", 6, {{"seed", attr_i(3)}, {"ratio", attr_f(0.25f)}}, {flt({3, 17})},
                 2, {DType::F32, DType::F16, DType::BF16}, "training, opset 6 (mask in X's dtype)"});
    for (const char* op : {"And", "Or", "Xor"})
      v.push_back({op, 7, {}, {bools({3, 4}), bools({4})}, 1, {DType::Bool}});
    v.push_back({"Shape", 15, {{"start", attr_i(1)}}, {flt({2, 3, 4})}});
    v.push_back({"Size", 13, {}, {flt({2, 3, 4})}});
    v.push_back({"CastLike", 15, {}, {flt({5, 7}), f32({1})}});
    // unary and activations
    for (const char* op : {"Exp", "Neg", "Abs", "Floor", "Ceil", "Sign", "Round", "Sin", "Cos",
                           "Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf",
                           "Softsign", "Softplus", "Mish", "Selu", "Elu", "Celu"})
      v.push_back({op, 18, {}, {flt({3, 17})}});
    for (const char* op : {"Sqrt", "Log", "Reciprocal"}) v.push_back({op, 13, {}, {pos({3, 17})}});
    for (const char* op : {"Atan", "Sinh", "Cosh", "Asinh"})
      v.push_back({op, 9, {}, {flt({3, 17})}});
    v.push_back({"Tan", 7, {}, {spread(51, -1.4f, 1.4f)}});
    for (const char* op : {"Asin", "Acos", "Atanh"})
      v.push_back({op, 9, {}, {spread(51, -0.95f, 0.95f)}});
    v.push_back({"Acosh", 9, {}, {spread(51, 1.f, 6.f)}});
    // Composite ops (runtime/composite/): the expansion runs on each backend. LRN size 4 pads
    // the channel window asymmetrically.
    v.push_back({"LRN", 13, {{"size", attr_i(5)}, {"alpha", attr_f(0.3f)}}, {flt({2, 7, 3, 4})}});
    v.push_back({"LRN", 13, {{"size", attr_i(4)}, {"beta", attr_f(0.5f)}}, {flt({2, 6, 5})}});
    v.push_back({"MeanVarianceNormalization", 13, {}, {flt({2, 3, 4, 5})}});
    v.push_back({"GroupNormalization", 18, {{"num_groups", attr_i(2)}},
                 {flt({2, 6, 3, 4}), flt({2}), flt({2})}});
    v.push_back({"GroupNormalization", 21, {{"num_groups", attr_i(3)}},
                 {flt({2, 6, 5}), flt({6}), flt({6})}});
    v.push_back({"MeanVarianceNormalization", 13, {{"axes", attr_ints({1, 2})}}, {flt({2, 3, 4})}});
    // GridSample (grid_sample.cc): coordinates in F32 on the device, flat indices cast to int64
    // there and read with GatherElements (device-produced indices). Grid values in [-1.3, 1.3]
    // (some points outside the image), every mode × padding_mode × align_corners.
    {
      std::vector<float> g(2 * 4 * 3 * 2);
      for (size_t i = 0; i < g.size(); ++i)
        g[i] = -1.3f + 2.6f * static_cast<float>((i * 37 + 11) % 53) / 52.f;
      for (const char* mode : {"bilinear", "nearest", "bicubic"})
        for (const char* pad : {"zeros", "border", "reflection"})
          for (int64_t align : {0, 1})
            v.push_back({"GridSample", 16,
                         {{"mode", attr_s(mode)},
                          {"padding_mode", attr_s(pad)},
                          {"align_corners", attr_i(align)}},
                         {flt({2, 3, 5, 6}), vals({2, 4, 3, 2}, g)}});
    }
    // The index-driven composites (indexing.cc): int64 index arithmetic, then Gather,
    // GatherElements and the scatter-adds GatherGrad / GatherElementsGrad.
    v.push_back({"OneHot", 11, {}, {ints({1, -1, 7, 0}, {2, 2}), ints({5}, {}), flt({2})}});
    v.push_back({"OneHot", 9, {{"axis", attr_i(0)}}, {ints({2, 0, -3}), ints({4}), flt({2})}});
    v.push_back({"EyeLike", 9, {{"k", attr_i(1)}}, {flt({3, 5})}});
    v.push_back({"GatherND", 13, {}, {flt({3, 4, 2}), ints({0, 1, -1, 3, 0, 1}, {3, 2})}});
    v.push_back({"GatherND", 13, {{"batch_dims", attr_i(1)}},
                 {flt({2, 3, 4}), ints({2, -1, 0, 0}, {2, 2, 1})}});
    v.push_back({"ScatterElements", 13, {{"axis", attr_i(0)}},
                 {flt({3, 4}), ints({0, 2, -1, 1, 0, 0}, {2, 3}), flt({2, 3})}});
    v.push_back({"ScatterElements", 16, {{"axis", attr_i(1)}, {"reduction", attr_s("add")}},
                 {flt({3, 4}), ints({0, 0, -1, 3, 3, 1}, {2, 3}), flt({2, 3})}});
    v.push_back({"Scatter", 9, {}, {flt({4, 2}), ints({3, 1}, {1, 2}), flt({1, 2})}});
    v.push_back({"ScatterND", 13, {}, {flt({4, 3, 2}), ints({0, 1, -1, 2}, {2, 2}), flt({2, 2})}});
    v.push_back({"ScatterND", 16, {{"reduction", attr_s("add")}},
                 {flt({4, 3}), ints({1, 1, -4}, {3, 1}), flt({3, 3})}});
    v.push_back({"ReverseSequence", 10, {}, {flt({4, 3, 2}), ints({4, 2, 1})}});
    v.push_back({"ReverseSequence", 10, {{"time_axis", attr_i(1)}, {"batch_axis", attr_i(0)}},
                 {flt({3, 4}), ints({3, 4, 1})}});
    v.push_back({"Shrink", 9, {{"lambd", attr_f(1.f)}, {"bias", attr_f(0.5f)}}, {flt({3, 17})}});
    v.push_back({"LeakyRelu", 16, {{"alpha", attr_f(0.2f)}}, {flt({3, 17})}});
    v.push_back({"ThresholdedRelu", 10, {{"alpha", attr_f(0.5f)}}, {flt({3, 17})}});
    v.push_back({"Gelu", 20, {}, {flt({3, 17})}});
    v.push_back({"Gelu", 20, {{"approximate", attr_s("tanh")}}, {flt({3, 17})}});
    v.push_back({"Clip", 13, {}, {flt({3, 17}), In{In::NegUnit, {}}, In{In::Unit, {}}}});
    // casts
    for (int64_t to : {1, 10, 16, 7, 6, 9})
      v.push_back({"Cast", 13, {{"to", attr_i(to)}}, {flt({5, 7})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, "to=" + std::to_string(to)});
    // GEMMs
    v.push_back({"MatMul", 13, {}, {flt({5, 7}), flt({7, 3})}});
    v.push_back({"MatMul", 13, {}, {flt({2, 5, 7}), flt({7, 3})}});
    v.push_back({"MatMul", 13, {}, {flt({2, 5, 7}), flt({2, 7, 3})}});
    v.push_back({"MatMul", 13, {}, {flt({2, 1, 4, 6}), flt({3, 6, 5})}});
    v.push_back({"MatMul", 13, {}, {flt({7}), flt({7, 3})}});
    v.push_back({"MatMul", 13, {}, {flt({64, 96}), flt({96, 80})}});
    v.push_back({"Gemm", 13, {}, {flt({5, 7}), flt({7, 3}), flt({3})}});
    v.push_back({"Gemm", 13,
                 {{"transA", attr_i(1)}, {"transB", attr_i(1)}, {"alpha", attr_f(0.5f)},
                  {"beta", attr_f(2.f)}},
                 {flt({7, 5}), flt({3, 7}), flt({5, 3})}});
    // K = 0: an empty sum, zeros (MatMul) and beta·C (Gemm); no cuBLAS call (leading dims 0)
    v.push_back({"MatMul", 13, {}, {flt({2, 5, 0}), flt({0, 3})}});
    v.push_back({"Gemm", 13, {{"transA", attr_i(1)}, {"beta", attr_f(2.f)}},
                 {flt({0, 5}), flt({0, 3}), flt({5, 3})}});
    // softmax family and reductions
    v.push_back({"Softmax", 13, {}, {flt({4, 33})}});
    v.push_back({"LogSoftmax", 13, {}, {flt({4, 1000})}});
    // a warp per row (len ≤ 512): a last block with 5 of its 8 rows, the longest warp row
    v.push_back({"Softmax", 13, {}, {flt({2, 4, 37, 28})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "warp rows"});
    v.push_back({"LogSoftmax", 13, {}, {flt({3, 512})}, 1, {DType::F32, DType::F16, DType::BF16},
                 "warp rows"});
    v.push_back({"Softmax", 13, {{"axis", attr_i(1)}}, {flt({2, 5, 3})}});
    v.push_back({"LogSoftmax", 11, {{"axis", attr_i(1)}}, {flt({2, 3, 4})}});
    v.push_back({"ReduceSum", 13, {}, {flt({3, 4, 5}), ints({1})}});
    v.push_back({"ReduceMean", 13, {{"axes", attr_ints({0, 2})}, {"keepdims", attr_i(0)}},
                 {flt({3, 4, 5})}});
    v.push_back({"ReduceMax", 13, {}, {flt({3, 4, 5})}});
    v.push_back({"ReduceMin", 13, {{"axes", attr_ints({-1})}}, {flt({3, 4, 5})}});
    v.push_back({"ReduceSumSquare", 13, {{"axes", attr_ints({1})}}, {flt({3, 4, 5})}});
    v.push_back({"ReduceL1", 13, {{"axes", attr_ints({1})}}, {flt({3, 4, 5})}});
    v.push_back({"ReduceL2", 13, {{"axes", attr_ints({0})}}, {flt({3, 4, 5})}});
    v.push_back({"ReduceLogSumExp", 13, {{"axes", attr_ints({2})}}, {flt({3, 4, 5})}});
    {  // a +inf maximum gives +inf (not inf − inf = NaN); a row of −inf gives −inf
      const float inf = std::numeric_limits<float>::infinity();
      v.push_back({"ReduceLogSumExp", 13, {{"axes", attr_ints({1})}},
                   {vals({3, 3}, {1.f, inf, 2.f, -inf, -inf, -inf, 0.5f, -1.f, 2.f})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, "infinities"});
    }
    v.push_back({"ReduceLogSum", 13, {{"axes", attr_ints({2})}}, {pos({3, 4, 5})}});
    v.push_back({"ReduceProd", 13, {{"axes", attr_ints({2})}}, {pos({3, 4, 3})}});
    v.push_back({"ReduceSum", 13, {}, {flt({4096 + 17}), ints({0})}, 1, {DType::F32}, "long"});
    // Schedules (reduce_impl.h): columns split over 128 chunks (a bias gradient), columns with
    // two reduced dims around the kept ones, rows split into chunks (few outputs, long rows),
    // each op's finish (mean, sqrt, log) applied once after the chunks combine.
    v.push_back({"ReduceSum", 13, {}, {flt({8192, 40}), ints({0})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "columns, split"});
    v.push_back({"ReduceMean", 13, {{"axes", attr_ints({0, 2})}}, {flt({3, 5, 300, 7})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "columns, two reduced dims, split"});
    v.push_back({"ReduceMin", 13, {{"axes", attr_ints({0})}}, {flt({300, 7})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "columns, split"});
    v.push_back({"ReduceMax", 13, {{"axes", attr_ints({1})}}, {flt({2, 20000})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "rows, split"});
    v.push_back({"ReduceL2", 13, {{"axes", attr_ints({1})}}, {flt({3, 9000})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "rows, split"});
    v.push_back({"ReduceLogSum", 13, {{"axes", attr_ints({0, 2})}}, {pos({4, 3, 3000})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "rows, two reduced dims, split"});
    // shapes and movement
    v.push_back({"Reshape", 14, {}, {flt({2, 3, 4}), ints({4, -1})}});
    v.push_back({"Flatten", 13, {{"axis", attr_i(2)}}, {flt({2, 3, 4})}});
    v.push_back({"Unsqueeze", 13, {}, {flt({2, 3}), ints({0, 3})}});
    v.push_back({"Squeeze", 13, {}, {flt({2, 1, 3}), ints({1})}});
    v.push_back({"Identity", 16, {}, {flt({2, 3})}});
    v.push_back({"Transpose", 13, {{"perm", attr_ints({0, 2, 1, 3})}}, {flt({2, 3, 4, 5})}});
    v.push_back({"Transpose", 13, {}, {flt({3, 4})}});
    v.push_back({"Slice", 13, {}, {flt({4, 6}), ints({1, -5}), ints({3, 100}), ints({0, 1}),
                                   ints({1, 2})}});
    v.push_back({"Slice", 13, {}, {flt({4, 6}), ints({-1}), ints({-100}), ints({1}), ints({-2})}});
    v.push_back({"Concat", 13, {{"axis", attr_i(1)}}, {flt({2, 3, 2}), flt({2, 1, 2}), flt({2, 2, 2})}});
    v.push_back({"Split", 13, {{"axis", attr_i(1)}}, {flt({2, 5, 3}), ints({2, 3})}, 2});
    v.push_back({"Gather", 13, {{"axis", attr_i(1)}}, {flt({3, 4, 2}), ints({0, 3, 1, -1}, {2, 2})}});
    v.push_back({"Expand", 13, {}, {flt({3, 1}), ints({2, 3, 4})}});
    v.push_back({"Trilu", 14, {}, {flt({2, 4, 5}), ints({1})}, 1,
                 {DType::F32, DType::F16, DType::BF16, DType::F64}});
    v.push_back({"Trilu", 14, {{"upper", attr_i(0)}}, {flt({5, 3}), ints({-1})}});
    v.push_back({"Trilu", 14, {{"upper", attr_i(0)}}, {flt({3, 3})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "no k"});
    v.push_back({"Pad", 13, {}, {flt({2, 3}), ints({1, 2, 0, -1})}});
    v.push_back({"Pad", 13, {}, {flt({2, 3}), ints({0, 1, 1, 2}), flt({})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "value"});
    v.push_back({"Pad", 13, {{"mode", attr_s("reflect")}}, {flt({3, 4}), ints({2, 3, 1, 5})}});
    v.push_back({"Pad", 13, {{"mode", attr_s("edge")}}, {flt({3, 4}), ints({1, 2, 3, 1})}});
    v.push_back({"Pad", 19, {{"mode", attr_s("wrap")}}, {flt({3, 4}), ints({1, 5, 2, 1})}});
    v.push_back({"Pad", 18, {}, {flt({2, 3, 4}), ints({1, 2}), In{In::Float, {}}, ints({-1})}});
    v.push_back({"Tile", 13, {}, {flt({2, 3, 2}), ints({2, 1, 3})}});
    v.push_back({"DepthToSpace", 13, {{"blocksize", attr_i(2)}}, {flt({2, 8, 3, 2})}});
    v.push_back({"DepthToSpace", 13, {{"blocksize", attr_i(2)}, {"mode", attr_s("CRD")}},
                 {flt({2, 8, 3, 2})}});
    v.push_back({"SpaceToDepth", 13, {{"blocksize", attr_i(2)}}, {flt({2, 3, 4, 6})}});
    v.push_back({"Hardmax", 13, {}, {flt({4, 9})}});
    v.push_back({"Hardmax", 11, {{"axis", attr_i(1)}}, {flt({2, 3, 4})}});
    v.push_back({"CumSum", 14, {}, {flt({3, 5, 2}), ints({1}, Shape{})}});
    v.push_back({"CumSum", 14, {{"exclusive", attr_i(1)}, {"reverse", attr_i(1)}},
                 {flt({3, 5}), ints({-1}, Shape{})}});
    v.push_back({"ArgMax", 13, {{"axis", attr_i(1)}}, {flt({3, 7, 2})}});
    v.push_back({"ArgMin", 13, {{"axis", attr_i(-1)}, {"keepdims", attr_i(0)}}, {flt({3, 7})}});
    // TopK: indices must be equal, so ties (F16/BF16 rounding makes some) and NaN follow one rule
    // on both backends: the lower index first, NaN above every number.
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      v.push_back({"TopK", 11, {}, {flt({3, 17}), ints({5})}, 2});
      v.push_back({"TopK", 11, {{"axis", attr_i(0)}, {"largest", attr_i(0)}},
                   {flt({6, 4, 3}), ints({3})}, 2, all3, "axis 0, smallest"});
      v.push_back({"TopK", 11, {{"axis", attr_i(-2)}, {"sorted", attr_i(0)}},
                   {vals({2, 6, 2}, {1, 3, 3, 2, 3, 0, -1, -1, 2, 2, 0, -1, 5, 5, 5, 5, 0, -0.f,
                                     -0.f, 0, nan, 1, 1, nan}),
                    ints({4})},
                   2, all3, "ties, signed zeros, NaN"});
      v.push_back({"TopK", 1, {{"k", attr_i(2)}}, {flt({4, 5})}, 2, all3, "opset 1"});
      v.push_back({"TopK", 10, {}, {flt({2, 300}), ints({300})}, 2, all3, "k = len"});
      v.push_back({"TopK", 11, {}, {flt({3, 4}), ints({0})}, 2, all3, "k = 0"});
    }
    // convolution, pooling, normalisation
    v.push_back({"Conv", 11, {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}},
                 {flt({2, 3, 8, 8}), flt({4, 3, 3, 3}), flt({4})}});
    v.push_back({"Conv", 11, {{"group", attr_i(2)}, {"kernel_shape", attr_ints({3, 3})}},
                 {flt({1, 4, 6, 6}), flt({6, 2, 3, 3})}});
    v.push_back({"Conv", 11, {{"dilations", attr_ints({2})}}, {flt({2, 3, 9}), flt({2, 3, 3})}});
    v.push_back({"ConvGrad", 1, {{"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({2, 4, 5, 5}), flt({2, 3, 5, 5}), flt({4, 3, 3, 3})}, 3});
    // empty operands skip cuDNN (0 dims are CUDNN_STATUS_BAD_PARAM): Y = B, zero gradients
    v.push_back({"Conv", 11, {{"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({2, 0, 5, 5}), flt({4, 0, 3, 3}), flt({4})}});
    v.push_back({"ConvGrad", 1, {{"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({0, 4, 5, 5}), flt({0, 3, 5, 5}), flt({4, 3, 3, 3})}, 3});
    v.push_back({"MaxPool", 12, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
                 {flt({2, 3, 6, 6})}});
    v.push_back({"AveragePool", 11,
                 {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({2, 3, 5, 5})}});
    v.push_back({"AveragePool", 11,
                 {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})},
                  {"count_include_pad", attr_i(1)}},
                 {flt({2, 3, 5, 5})}});
    v.push_back({"GlobalAveragePool", 1, {}, {flt({2, 3, 5, 4})}});
    v.push_back({"AveragePool", 11, {{"kernel_shape", attr_ints({2, 2})}}, {flt({0, 3, 5, 5})}});
    v.push_back({"GlobalMaxPool", 1, {}, {flt({2, 3, 5, 4})}});
    v.push_back({"BatchNormalization", 15, {},
                 {flt({2, 3, 4, 4}), f32({3}), f32({3}), f32({3}), f32({3}, In::Positive)}});
    // ConvTranspose(+Grad), InstanceNormalization and its gradient (BatchNormalizationGrad with
    // instance = 1), BatchNormalization spatial = 0 (opset < 9), MaxPool's Indices
    const std::vector<DType> all = {DType::F32, DType::F16, DType::BF16};
    const std::map<std::string, Attribute> ct_pads = {{"strides", attr_ints({2, 2})},
                                                      {"pads", attr_ints({1, 1, 1, 1})},
                                                      {"output_padding", attr_ints({1, 1})}};
    const std::map<std::string, Attribute> ct_group = {
        {"group", attr_i(2)}, {"dilations", attr_ints({2})}, {"strides", attr_ints({3})}};
    const std::map<std::string, Attribute> ct_shape = {{"strides", attr_ints({2, 2})},
                                                       {"output_shape", attr_ints({8, 7})}};
    v.push_back({"ConvTranspose", 11, ct_pads, {flt({2, 4, 3, 3}), flt({4, 3, 3, 3}), flt({3})}});
    v.push_back({"ConvTranspose", 11, ct_group, {flt({2, 4, 5}), flt({4, 2, 3})}, 1, all,
                 "group, dilated 1-D"});
    v.push_back({"ConvTranspose", 11, ct_shape, {flt({1, 2, 3, 3}), flt({2, 3, 3, 3})}, 1, all,
                 "output_shape"});
    v.push_back({"ConvTranspose", 11,
                 {{"auto_pad", attr_s("SAME_LOWER")}, {"strides", attr_ints({2, 2})}},
                 {flt({1, 2, 3, 3}), flt({2, 3, 3, 3}), flt({3})}, 1, all, "SAME_LOWER"});
    v.push_back({"ConvTranspose", 11, {{"pads", attr_ints({0, 1, 0, 0, 1, 0})}},
                 {flt({1, 2, 2, 3, 3}), flt({2, 2, 2, 2, 2})}, 1, all, "3-D"});
    v.push_back({"ConvTransposeGrad", 1, ct_pads,
                 {flt({2, 3, 6, 6}), flt({2, 4, 3, 3}), flt({4, 3, 3, 3})}, 3});
    v.push_back({"ConvTransposeGrad", 1, ct_group,
                 {flt({2, 4, 17}), flt({2, 4, 5}), flt({4, 2, 3})}, 3, all, "group, dilated 1-D"});
    v.push_back({"ConvTransposeGrad", 1, ct_shape,
                 {flt({1, 3, 8, 7}), flt({1, 2, 3, 3}), flt({2, 3, 3, 3})}, 3, all,
                 "output_shape"});
    {
      // grad_type = 1: dW, dB in F32 (CUDA's dW: cuDNN writes F16/BF16, then widened).
      auto attrs = ct_pads;
      attrs["grad_type"] = attr_i(1);
      v.push_back({"ConvTransposeGrad", 1, attrs,
                   {flt({2, 3, 6, 6}), flt({2, 4, 3, 3}), flt({4, 3, 3, 3})}, 3, all, "grad_type"});
    }
    v.push_back({"InstanceNormalization", 6, {}, {flt({2, 3, 4, 5}), flt({3}), flt({3})}});
    v.push_back({"InstanceNormalization", 6, {{"epsilon", attr_f(1e-3f)}},
                 {flt({2, 3, 7}), flt({3}), flt({3})}, 1, all, "1-D"});
    v.push_back({"BatchNormalizationGrad", 1,
                 {{"instance", attr_i(1)}, {"training_mode", attr_i(1)}},
                 {flt({2, 3, 4, 5}), flt({2, 3, 4, 5}), f32({3})}, 3, all, "instance"});
    v.push_back({"BatchNormalizationGrad", 1, {{"instance", attr_i(1)}},
                 {flt({2, 3, 6}), flt({2, 3, 6}), flt({3})}, 3, all, "instance, scale in dtype"});
    v.push_back({"BatchNormalization", 7, {{"spatial", attr_i(0)}},
                 {flt({2, 3, 4}), f32({3, 4}), f32({3, 4}), f32({3, 4}), f32({3, 4}, In::Positive)},
                 1, all, "spatial=0"});
    v.push_back({"BatchNormalization", 7, {{"spatial", attr_i(0)}, {"momentum", attr_f(0.8f)}},
                 {flt({4, 3, 2, 2}), f32({3, 2, 2}), f32({3, 2, 2}), f32({3, 2, 2}),
                  f32({3, 2, 2}, In::Positive)},
                 5, all, "spatial=0, training"});
    v.push_back({"BatchNormalizationGrad", 1,
                 {{"spatial", attr_i(0)}, {"training_mode", attr_i(1)}},
                 {flt({4, 3, 2, 2}), flt({4, 3, 2, 2}), f32({3, 2, 2})}, 3, all,
                 "spatial=0, training"});
    v.push_back({"BatchNormalizationGrad", 1, {{"spatial", attr_i(0)}},
                 {flt({4, 3, 5}), flt({4, 3, 5}), f32({3, 5}), f32({3, 5}),
                  f32({3, 5}, In::Positive)},
                 3, all, "spatial=0"});
    v.push_back({"MaxPool", 12,
                 {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})},
                  {"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({2, 3, 7, 7})}, 2, all, "Indices"});
    v.push_back({"MaxPool", 12,
                 {{"kernel_shape", attr_ints({2, 3})}, {"dilations", attr_ints({2, 1})},
                  {"strides", attr_ints({2, 2})}, {"pads", attr_ints({0, 1, 1, 0})},
                  {"ceil_mode", attr_i(1)}, {"storage_order", attr_i(1)}},
                 {flt({1, 2, 7, 6})}, 2, all, "Indices, column-major, dilated, ceil"});
    v.push_back({"MaxPool", 12, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}},
                 {flt({2, 2, 9})}, 2, all, "Indices 1-D"});
    // gradients (internal domain)
    for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad"})  // (dY, Y)
      v.push_back({op, 1, {}, {flt({3, 17}), In{In::Unit, {3, 17}}}});
    for (const char* op : {"LeakyReluGrad", "GeluGrad", "EluGrad", "SoftplusGrad",
                           "HardSigmoidGrad", "HardSwishGrad"})  // (dY, X)
      v.push_back({op, 1, {}, {flt({3, 17}), flt({3, 17})}});
    v.push_back({"GeluGrad", 1, {{"approximate", attr_s("tanh")}}, {flt({3, 17}), flt({3, 17})}});
    v.push_back({"ClipGrad", 1, {}, {flt({3, 17}), flt({3, 17}), In{In::NegUnit, {}},
                                     In{In::Unit, {}}}});
    // A dY that overflowed to ±inf where the mask is 0 gives dX = 0 (not inf·0 = NaN), as
    // the CPU's select and PyTorch's threshold_backward / hardtanh_backward.
    {
      const float inf = INFINITY;
      v.push_back({"ReluGrad", 1, {}, {vals({4}, {inf, 1.f, -inf, 2.f}), vals({4}, {0.f, 1.f, 0.f, 2.f})},
                   1, {DType::F32, DType::F16, DType::BF16}, "overflowed dY masked"});
      v.push_back({"ClipGrad", 1, {}, {vals({4}, {inf, 1.f, -inf, 2.f}),
                                       vals({4}, {-2.f, 0.5f, 3.f, 0.f}), vals({}, {-1.f}),
                                       vals({}, {1.f})},
                   1, {DType::F32, DType::F16, DType::BF16}, "overflowed dY masked"});
      v.push_back({"HardSwishGrad", 1, {}, {vals({2}, {inf, 1.f}), vals({2}, {-4.f, 1.f})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, "overflowed dY masked"});
    }
    v.push_back({"SumToShape", 1, {}, {flt({2, 3, 4}), ints({3, 1})}});
    v.push_back({"SumToShape", 1, {}, {flt({5, 6}), ints({6})}});
    v.push_back({"SumToShape", 1, {}, {flt({64, 64, 24}), ints({24})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "bias gradient, split"});
    v.push_back({"ReduceGrad", 1, {{"axes", attr_ints({1})}, {"mean", attr_i(1)}},
                 {flt({3, 1, 5}), ints({3, 4, 5})}});
    v.push_back({"ReduceGrad", 1, {{"keepdims", attr_i(0)}}, {flt({}), ints({3, 4})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "to scalar"});
    v.push_back({"MatMulGrad", 1, {}, {flt({5, 3}), flt({5, 7}), flt({7, 3})}, 2});
    // an empty batch: A's and B's broadcast 1s get zero gradients (no GEMM writes them)
    v.push_back({"MatMulGrad", 1, {}, {flt({0, 5, 3}), flt({1, 5, 7}), flt({0, 7, 3})}, 2});
    v.push_back({"MatMulGrad", 1, {}, {flt({0, 5, 3}), flt({0, 5, 7}), flt({1, 7, 3})}, 2});
    v.push_back({"MatMulGrad", 1, {}, {flt({2, 5, 3}), flt({2, 5, 7}), flt({7, 3})}, 2, {DType::F32},
                 "shared weight"});
    v.push_back({"MatMulGrad", 1, {}, {flt({2, 5, 3}), flt({2, 5, 7}), flt({2, 7, 3})}, 2,
                 {DType::F32}, "batched"});
    v.push_back({"MatMulGrad", 1, {}, {flt({2, 5, 3}), flt({5, 7}), flt({2, 7, 3})}, 2,
                 {DType::F32}, "shared input"});
    v.push_back({"GemmGrad", 1, {{"alpha", attr_f(0.5f)}, {"beta", attr_f(2.f)}},
                 {flt({5, 3}), flt({5, 7}), flt({7, 3}), flt({3})}, 3});
    v.push_back({"GemmGrad", 1, {{"transA", attr_i(1)}, {"transB", attr_i(1)}},
                 {flt({5, 3}), flt({7, 5}), flt({3, 7}), flt({5, 3})}, 3, {DType::F32}, "transposed"});
    v.push_back({"SliceGrad", 1, {}, {flt({2, 3}), ints({4, 6}), ints({1, -5}), ints({3, 100}),
                                      ints({0, 1}), ints({1, 2})}});
    v.push_back({"SliceGrad", 1, {}, {flt({4, 3}), ints({4, 6}), ints({-1}), ints({-100}),
                                      ints({1}), ints({-2})}});
    v.push_back({"ConcatGrad", 1, {{"axis", attr_i(1)}},
                 {flt({2, 6, 2}), ints({2, 3, 2}), ints({2, 1, 2}), ints({2, 2, 2})}, 3});
    v.push_back({"GatherGrad", 1, {{"axis", attr_i(1)}},
                 {flt({3, 2, 2, 2}), ints({3, 4, 2}), ints({0, 3, 1, -1}, {2, 2})}});
    v.push_back({"GatherGrad", 1, {}, {flt({6, 5}), ints({4, 5}), ints({1, 1, 3, 0, 1, 3})}});
    v.push_back({"TileGrad", 1, {}, {flt({4, 3, 6}), ints({2, 3, 2})}});
    v.push_back({"TileGrad", 1, {}, {flt({0, 3, 2}), ints({2, 3, 2})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "repeats 0"});
    v.push_back({"DropoutGrad", 1, {{"ratio", attr_f(0.25f)}}, {flt({3, 17}), bools({3, 17})}});
    // PadGrad, CumSumGrad, ReduceXYGrad, GatherElements(+Grad), PReluGrad
    v.push_back({"PadGrad", 1, {{"mode", attr_s("reflect")}},
                 {flt({7, 11}), ints({3, 4}), ints({2, 3, 2, 4})}});
    v.push_back({"PadGrad", 1, {}, {flt({4, 2}), ints({2, 3}), ints({1, 2, 1, -3})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "constant, crop"});
    v.push_back({"PadGrad", 1, {{"mode", attr_s("edge")}},
                 {flt({2, 3, 9}), ints({2, 3, 4}), ints({2, 3}), ints({-1})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "edge, axes"});
    v.push_back({"PadGrad", 1, {{"mode", attr_s("wrap")}, {"pads", attr_ints({1, 5, 2, 1})}},
                 {flt({6, 10}), ints({3, 4})}, 1, {DType::F32, DType::F16, DType::BF16},
                 "wrap, pads attribute"});
    v.push_back({"CumSumGrad", 1, {}, {flt({3, 5, 2}), ints({1}, Shape{})}});
    v.push_back({"CumSumGrad", 1, {{"exclusive", attr_i(1)}, {"reverse", attr_i(1)}},
                 {flt({3, 5}), ints({-1}, Shape{})}, 1, {DType::F32, DType::F16, DType::BF16},
                 "exclusive, reverse"});
    {
      // X with ties (Max/Min) and rows with no, one and two zeros (Prod); Y = the reduction.
      const In x_ties = vals({3, 4}, {1, 3, 3, 2, 0, 5, 5, 5, -1, 2, 2, 0});
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s("ReduceMax")}, {"axes", attr_ints({1})}},
                   {flt({3, 1}), x_ties, vals({3, 1}, {3, 5, 2})}});
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s("ReduceMin")}, {"keepdims", attr_i(0)}},
                   {flt({}), x_ties, vals({}, {-1})}, 1, {DType::F32, DType::F16, DType::BF16},
                   "all axes"});
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s("ReduceMin")}},
                   {flt({1, 4}), x_ties, vals({1, 4}, {-1, 2, 2, 0}), ints({0})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, "axes input"});
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s("ReduceProd")}, {"axes", attr_ints({1})}},
                   {flt({3, 1}), vals({3, 4}, {2, 3, 0.5f, 1.5f, 2, 0, -1, 3, 0, 4, 0, 2}),
                    vals({3, 1}, {4.5f, 0, 0})}});
    }
    for (const char* op : {"ReduceSumSquare", "ReduceL1", "ReduceLogSumExp"})
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s(op)}, {"axes", attr_ints({1})}},
                   {flt({3, 1, 5}), flt({3, 4, 5}), flt({3, 1, 5})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, op});
    for (const char* op : {"ReduceL2", "ReduceLogSum"})
      v.push_back({"ReduceXYGrad", 1, {{"reduce", attr_s(op)}, {"axes", attr_ints({0, 2})}},
                   {flt({1, 4, 1}), flt({3, 4, 5}), pos({1, 4, 1})}, 1,
                   {DType::F32, DType::F16, DType::BF16}, op});
    v.push_back({"GatherElements", 13, {{"axis", attr_i(1)}},
                 {flt({3, 4}), ints({0, 3, -1, 2, 1, 1, 0, -4}, {2, 4})}});
    {
      In idx32 = ints({2, 0, 1, -1, 0, 0, 2, 1}, {2, 2, 2});
      idx32.int_type = DType::I32;
      v.push_back({"GatherElements", 13, {}, {flt({3, 2, 2}), idx32}, 1,
                   {DType::F32, DType::F16, DType::BF16}, "axis 0, int32"});
    }
    v.push_back({"GatherElementsGrad", 1, {{"axis", attr_i(1)}},
                 {flt({2, 4}), ints({3, 4}), ints({0, 3, -1, 3, 1, 1, 0, -4}, {2, 4})}});
    v.push_back({"GatherElementsGrad", 1, {},
                 {flt({2, 2, 2}), ints({3, 2, 2}), ints({2, 0, 1, -1, 2, 0, 2, 1}, {2, 2, 2})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "axis 0"});
    v.push_back({"PReluGrad", 1, {}, {flt({2, 3, 4, 5}), flt({2, 3, 4, 5}), flt({3, 1, 1})}, 2});
    v.push_back({"PReluGrad", 1, {}, {flt({3, 17}), flt({3, 17}), flt({1})}, 2,
                 {DType::F32, DType::F16, DType::BF16}, "one slope"});
    v.push_back({"PReluGrad", 1, {}, {flt({3, 17}), flt({3, 17}), flt({3, 17})}, 2,
                 {DType::F32, DType::F16, DType::BF16}, "slope per element"});
    v.push_back({"PReluGrad", 1, {{"legacy_slope", attr_i(1)}},
                 {flt({2, 3, 4}), flt({2, 3, 4}), flt({3})}, 2,
                 {DType::F32, DType::F16, DType::BF16}, "legacy per-channel slope"});
    v.push_back({"MaxPoolGrad", 1, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
                 {flt({2, 3, 3, 3}), flt({2, 3, 6, 6})}, 1, {DType::F32}});
    v.push_back({"AveragePoolGrad", 1,
                 {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}},
                 {flt({2, 3, 5, 5}), ints({2, 3, 5, 5})}});
    v.push_back({"AveragePoolGrad", 1, {{"kernel_shape", attr_ints({2, 2})}},
                 {flt({0, 3, 4, 4}), ints({0, 3, 5, 5})}});
    v.push_back({"GlobalAveragePoolGrad", 1, {}, {flt({2, 3, 1, 1}), ints({2, 3, 5, 4})}});
    v.push_back({"GlobalMaxPoolGrad", 1, {}, {flt({2, 3, 1, 1}), flt({2, 3, 5, 4})}, 1, {DType::F32}});
    v.push_back({"SoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {flt({4, 33}), In{In::Unit, {4, 33}}}});
    v.push_back({"SoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {flt({37, 600}), In{In::Unit, {37, 600}}},
                 1, {DType::F32, DType::F16, DType::BF16}, "block rows"});
    v.push_back({"LogSoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {flt({45, 7}), flt({45, 7})}, 1,
                 {DType::F32, DType::F16, DType::BF16}, "warp rows"});
    v.push_back({"LogSoftmaxGrad", 1, {{"axis", attr_i(1)}}, {flt({2, 5, 3}), flt({2, 5, 3})}});
    v.push_back({"LogSoftmaxGrad", 1, {{"axis", attr_i(1)}, {"coerce_2d", attr_i(1)}},
                 {flt({2, 3, 4}), flt({2, 3, 4})}});
    v.push_back({"LayerNormalization", 17, {}, {flt({4, 6, 32}), flt({32}), flt({32})}, 3});
    v.push_back({"LayerNormalization", 17, {{"axis", attr_i(1)}}, {flt({3, 4, 5}), flt({5})}});
    v.push_back({"LayerNormalizationGrad", 1, {}, {flt({4, 6, 32}), flt({4, 6, 32}), flt({32})}, 3});
    v.push_back({"LayerNormalizationGrad", 1, {{"axis", attr_i(1)}},
                 {flt({3, 4, 5}), flt({3, 4, 5}), flt({4, 5})}, 3});
    v.push_back({"LayerNormalizationGrad", 1, {}, {flt({0, 32}), flt({0, 32}), flt({32})}, 3});
    // 2048 rows of 48: dScale/dBias split over 32 chunks of 64 rows (norm_impl.cu)
    v.push_back({"LayerNormalizationGrad", 1, {}, {flt({2048, 48}), flt({2048, 48}), flt({48})}, 3,
                 {DType::F32, DType::F16, DType::BF16}, "split column sums"});
    // LpNormalization(+Grad): p 2 and 1, rows (one block each) and strided columns, a zero lane.
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      const In zero_lane = vals({2, 3}, {0, 0, 0, 1, -2, 2});
      v.push_back({"LpNormalization", 1, {}, {flt({4, 1500})}});
      v.push_back({"LpNormalization", 1, {{"axis", attr_i(1)}, {"p", attr_i(1)}},
                   {flt({2, 5, 3})}, 1, all3, "p = 1, axis 1"});
      v.push_back({"LpNormalization", 1, {}, {zero_lane}, 1, all3, "zero lane"});
      v.push_back({"LpNormalizationGrad", 1, {}, {flt({4, 1500}), flt({4, 1500})}});
      v.push_back({"LpNormalizationGrad", 1, {{"axis", attr_i(0)}, {"p", attr_i(1)}},
                   {flt({5, 3}), flt({5, 3})}, 1, all3, "p = 1, axis 0"});
      v.push_back({"LpNormalizationGrad", 1, {}, {flt({2, 3}), zero_lane}, 1, all3, "zero lane"});
    }
    // losses
    v.push_back({"SoftmaxCrossEntropyLoss", 13, {}, {flt({4, 5}), ints({0, 4, 2, 2})}, 2});
    v.push_back({"SoftmaxCrossEntropyLoss", 13,
                 {{"reduction", attr_s("sum")}, {"ignore_index", attr_i(1)}},
                 {flt({3, 4, 2}), ints({1, 0, 3, 1, 2, 2}, {3, 2}), pos({4})}});
    v.push_back({"SoftmaxCrossEntropyLoss", 13, {{"reduction", attr_s("none")}},
                 {flt({4, 5}), ints({0, 4, 2, 2})}});
    v.push_back({"NegativeLogLikelihoodLoss", 13, {}, {flt({4, 5}), ints({0, 4, 2, 2}), pos({5})}});
    v.push_back({"SoftmaxCrossEntropyLossGrad", 1, {{"from_scores", attr_i(1)}},
                 {flt({}), flt({4, 5}), ints({0, 4, 2, 2})}});
    v.push_back({"SoftmaxCrossEntropyLossGrad", 1,
                 {{"reduction", attr_s("none")}, {"ignore_index", attr_i(2)}},
                 {flt({4}), flt({4, 5}), ints({0, 4, 2, 2}), pos({5})}});
    v.push_back({"NegativeLogLikelihoodLossGrad", 1, {{"reduction", attr_s("sum")}},
                 {flt({}), ints({4, 5}), ints({0, 4, 2, 2})}});
    v.push_back({"BatchNormalization", 15, {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.8f)}},
                 {flt({4, 3, 5, 5}), f32({3}), f32({3}), f32({3}), f32({3}, In::Positive)}, 3,
                 {DType::F32, DType::F16, DType::BF16}, "training"});
    v.push_back({"BatchNormalizationGrad", 1, {{"training_mode", attr_i(1)}},
                 {flt({4, 3, 5, 5}), flt({4, 3, 5, 5}), f32({3})}, 3, {DType::F32}, "training"});
    v.push_back({"BatchNormalizationGrad", 1, {},
                 {flt({4, 3, 5}), flt({4, 3, 5}), f32({3}), f32({3}), f32({3}, In::Positive)}, 3,
                 {DType::F32}});
    // fused mixed-precision ops: FP32 masters, gradients in the case dtype
    v.push_back({"UnscaleAndCheck", 1, {},
                 {f32({}, In::Unit), flt({3, 5}), flt({70000}), flt({1})}, 4});
    v.push_back({"UnscaleAndCheck", 1, {}, {f32({}, In::Unit), flt({5}), huge({3})}, 3,
                 {DType::F32, DType::F16, DType::BF16}, "overflow in F16"});
    v.push_back({"GlobalNormClip", 1, {}, {f32({3, 5}), f32({70000}), f32({}, In::Unit)}, 3,
                 {DType::F32}, "clipped"});
    v.push_back({"GlobalNormClip", 1, {}, {f32({3, 5}), f32({}, In::Huge)}, 2, {DType::F32},
                 "not clipped"});
    v.push_back({"SGDUpdate", 1, {{"momentum", attr_f(0.9f)}, {"weight_decay", attr_f(0.01f)}},
                 {f32({40}), f32({40}), f32({40}), f32({}, In::Unit)}, 2, {DType::F32}});
    v.push_back({"SGDUpdate", 1, {{"momentum", attr_f(0.9f)}, {"nesterov", attr_i(1)}},
                 {f32({40}), f32({40}), f32({40}), f32({}, In::Unit), all_true({})}, 2,
                 {DType::F32}, "skip"});
    v.push_back({"AdamUpdate", 1, {{"weight_decay", attr_f(0.01f)}, {"decoupled", attr_i(1)}},
                 {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                  ints({3}, Shape{})}, 3, {DType::F32}});
    // The fused working copy (runtime/working_type.h): P' rounded to F16 / BF16 in the update.
    v.push_back({"SGDUpdate", 1, {{"momentum", attr_f(0.9f)}, {"working_type", attr_i(10)}},
                 {f32({40}), f32({40}), f32({40}), f32({}, In::Unit)}, 3, {DType::F32},
                 "working copy F16"});
    v.push_back({"AdamUpdate", 1, {{"working_type", attr_i(16)}},
                 {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                  ints({3}, Shape{})}, 4, {DType::F32}, "working copy BF16"});
    v.push_back({"AdamUpdate", 1, {{"working_type", attr_i(10)}},
                 {f32({40}), f32({40}), f32({40}), f32({40}, In::Positive), f32({}, In::Unit),
                  ints({3}, Shape{}), all_true({})}, 4, {DType::F32}, "skip, working copy"});
    // Weight gradients in FP32 (grad_type = 1, runtime/grad_type.h): dB / dC / dW / dB are F32
    // from the FP32 accumulator on both backends (CUDA's conv dW: cuDNN writes F16/BF16, widened).
    const Attribute fp32_grads = attr_i(1);
    const std::vector<DType> low = {DType::F16, DType::BF16};
    v.push_back({"MatMulGrad", 1, {{"grad_type", fp32_grads}},
                 {flt({5, 3}), flt({5, 7}), flt({7, 3})}, 2,
                 {DType::F32, DType::F16, DType::BF16}, "grad_type"});
    v.push_back({"MatMulGrad", 1, {{"grad_type", fp32_grads}},
                 {flt({2, 5, 3}), flt({2, 5, 7}), flt({7, 3})}, 2, low, "shared weight, grad_type"});
    v.push_back({"MatMulGrad", 1, {{"grad_type", fp32_grads}},
                 {flt({2, 5, 3}), flt({2, 5, 7}), flt({2, 7, 3})}, 2, low, "batched, grad_type"});
    v.push_back({"MatMulGrad", 1, {{"grad_type", fp32_grads}},
                 {flt({2, 3, 5, 3}), flt({3, 5, 7}), flt({2, 1, 7, 3})}, 2, low,
                 "broadcast weight, grad_type"});
    v.push_back({"GemmGrad", 1,
                 {{"alpha", attr_f(0.5f)}, {"beta", attr_f(2.f)}, {"grad_type", fp32_grads}},
                 {flt({5, 3}), flt({5, 7}), flt({7, 3}), flt({3})}, 3,
                 {DType::F32, DType::F16, DType::BF16}, "grad_type"});
    v.push_back({"GemmGrad", 1,
                 {{"transA", attr_i(1)}, {"transB", attr_i(1)}, {"grad_type", fp32_grads}},
                 {flt({5, 3}), flt({7, 5}), flt({3, 7}), flt({5, 3})}, 3, low,
                 "transposed, grad_type"});
    v.push_back({"ConvGrad", 1, {{"pads", attr_ints({1, 1, 1, 1})}, {"grad_type", fp32_grads}},
                 {flt({2, 4, 5, 5}), flt({2, 3, 5, 5}), flt({4, 3, 3, 3})}, 3,
                 {DType::F32, DType::F16, DType::BF16}, "grad_type"});
    // Einsum, a composite op: its expansion (Transpose, Reshape, MatMul, Mul, Unsqueeze,
    // ReduceSum, Slice) on each backend. These graphs declare no shapes, so the reshape targets
    // come from Shape/ReduceProd/Concat at run time (host-side int64 on CUDA).
    for (const auto& [eq, shapes] : std::vector<std::pair<std::string, std::vector<Shape>>>{
             {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
             {"bhqd,bhkd->bhqk", {{2, 3, 4, 8}, {2, 3, 5, 8}}},
             {"abc,cd->abd", {{2, 3, 16}, {16, 5}}},
             {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
             {"i,j->ij", {{3}, {4}}},
             {"ij->", {{5, 7}}},
             {"bii->bi", {{2, 4, 4}}},
             {"ij,ij->ij", {{1, 4}, {3, 4}}}}) {
      std::vector<In> ins;
      for (const Shape& s : shapes) ins.push_back(flt(s));
      v.push_back({"Einsum", 12, {{"equation", attr_s(eq)}}, ins, 1,
                   {DType::F32, DType::F16, DType::BF16}, eq});
      v.back().declare_shapes = false;
    }
    // Resize / Upsample / ResizeGrad (runtime/cpu/kernels/resize_geometry.h): every mode, scales
    // and sizes, the legacy forms; roi and scales stay F32 (an empty tensor: not given).
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      auto f32v = [](Shape s, std::vector<float> v) {
        In i = vals(std::move(s), std::move(v));
        i.keep_f32 = true;
        return i;
      };
      const In none = f32({0});
      v.push_back({"Resize", 13, {{"mode", attr_s("linear")}},
                   {flt({2, 3, 5, 6}), none, f32v({4}, {1, 1, 1.5f, 2.f})}, 1, all3, "linear"});
      v.push_back({"Resize", 13,
                   {{"mode", attr_s("nearest")}, {"nearest_mode", attr_s("floor")},
                    {"coordinate_transformation_mode", attr_s("align_corners")}},
                   {flt({2, 3, 5, 6}), none, none, ints({2, 3, 9, 4})}, 1, all3, "nearest sizes"});
      v.push_back({"Resize", 11,
                   {{"mode", attr_s("cubic")}, {"exclude_outside", attr_i(1)},
                    {"cubic_coeff_a", attr_f(-0.5f)}},
                   {flt({1, 2, 7, 9}), none, f32v({4}, {1, 1, 0.6f, 1.8f})}, 1, all3, "cubic"});
      v.push_back({"Resize", 13,
                   {{"mode", attr_s("linear")},
                    {"coordinate_transformation_mode", attr_s("tf_crop_and_resize")},
                    {"extrapolation_value", attr_f(2.5f)}},
                   {flt({1, 2, 5, 6}), f32v({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f}), none,
                    ints({1, 2, 6, 5})},
                   1, all3, "tf_crop_and_resize"});
      v.push_back({"Resize", 10, {{"mode", attr_s("nearest")}},
                   {flt({1, 2, 4, 5}), f32v({4}, {1, 1, 0.6f, 2.f})}, 1, all3, "opset 10"});
      v.push_back({"Upsample", 9, {{"mode", attr_s("linear")}},
                   {flt({1, 2, 3, 4}), f32v({4}, {1, 1, 2.f, 3.f})}});
      v.push_back({"Upsample", 7, {{"scales", oat_test::attr_floats({1, 1, 3, 2})}},
                   {flt({1, 2, 3, 4})}, 1, all3, "scales attribute"});
      v.push_back({"ResizeGrad", 1, {{"mode", attr_s("linear")}},
                   {flt({2, 3, 7, 12}), ints({2, 3, 5, 6}), none, f32v({4}, {1, 1, 1.5f, 2.f})},
                   1, all3, "linear"});
      v.push_back({"ResizeGrad", 1,
                   {{"mode", attr_s("nearest")}, {"nearest_mode", attr_s("round_prefer_ceil")}},
                   {flt({1, 2, 3, 9}), ints({1, 2, 7, 4})}, 1, all3, "nearest sizes"});
      v.push_back({"ResizeGrad", 1,
                   {{"mode", attr_s("cubic")}, {"coordinate_transformation_mode",
                                                attr_s("tf_crop_and_resize")}},
                   {flt({1, 1, 6, 4}), ints({1, 1, 5, 6}),
                    f32v({8}, {0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f})},
                   1, all3, "cubic tf_crop_and_resize"});
    }
    // Quantization (runtime/cuda/kernels/quantize.cc): QuantizeLinear, DequantizeLinear and the
    // STE gradient are device kernels (x, scale and dY in the case dtype; zero points uint8 /
    // int8); the integer ops are the CPU kernels run through the CUDA registration's host kernel.
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      auto q8 = [](std::vector<int64_t> v, Shape s, DType t) {
        In i = ints(std::move(v), std::move(s));
        i.int_type = t;
        return i;
      };
      const In zp_u8 = q8({128}, Shape{}, DType::U8);
      const In zp_axis = q8({0, 128, 255}, {3}, DType::U8);
      const In zp_i8 = q8({-3, 0, 5}, {3}, DType::I8);
      const In scale_axis = vals({3}, {0.05f, 0.5f, 0.125f});
      v.push_back({"QuantizeLinear", 13, {}, {flt({2, 3, 4}), vals({}, {0.03125f}), zp_u8}, 1,
                   all3, "per tensor, saturating"});
      v.push_back({"QuantizeLinear", 13, {{"axis", attr_i(1)}}, {flt({2, 3, 4}), scale_axis, zp_axis},
                   1, all3, "per axis uint8"});
      v.push_back({"QuantizeLinear", 13, {{"axis", attr_i(-2)}}, {flt({2, 3, 4}), scale_axis, zp_i8},
                   1, all3, "per axis int8"});
      v.push_back({"QuantizeLinear", 10, {}, {flt({5, 7}), pos({})}, 1, all3, "no zero point"});
      v.push_back({"DequantizeLinear", 13, {},
                   {q8({0, 3, 128, 200, 255, 17}, {2, 3}, DType::U8), pos({}), zp_u8}, 1, all3,
                   "per tensor"});
      v.push_back({"DequantizeLinear", 13, {},
                   {q8({-128, -1, 0, 7, 127, 64}, {2, 3}, DType::I8), scale_axis, zp_i8}, 1, all3,
                   "per axis int8"});
      v.push_back({"DequantizeLinear", 13, {},
                   {q8({-70000, 5, 123456}, {3}, DType::I32), pos({})}, 1, all3, "int32"});
      v.push_back({"QuantizeLinearGrad", 1, {},
                   {flt({2, 3, 4}), flt({2, 3, 4}), vals({}, {0.03125f}), zp_u8}, 1, all3,
                   "per tensor"});
      v.push_back({"QuantizeLinearGrad", 1, {{"axis", attr_i(1)}},
                   {flt({2, 3, 4}), flt({2, 3, 4}), scale_axis, zp_i8}, 1, all3, "per axis"});
      v.push_back({"DynamicQuantizeLinear", 11, {}, {flt({3, 5})}, 3, all3});
      const std::vector<DType> one = {DType::F32};  // integer operands: the dtype is not used
      v.push_back({"MatMulInteger", 10, {},
                   {q8({1, 2, 3, 4, 5, 6}, {2, 3}, DType::U8), q8({7, 8, 9, 10, 11, 12}, {3, 2}, DType::I8),
                    q8({2}, Shape{}, DType::U8), q8({-1, 1}, {2}, DType::I8)},
                   1, one});
      v.push_back({"ConvInteger", 10, {{"pads", attr_ints({1, 1, 1, 1})}},
                   {q8({2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3}, DType::U8),
                    q8({1, 1, 1, 1}, {1, 1, 2, 2}, DType::U8), q8({1}, Shape{}, DType::U8)},
                   1, one});
      v.push_back({"QLinearMatMul", 10, {},
                   {q8({208, 236, 0, 238, 3, 214}, {2, 3}, DType::U8), f32({}, In::Positive),
                    q8({113}, Shape{}, DType::U8), q8({152, 51, 244, 60, 26, 255}, {3, 2}, DType::U8),
                    f32({}, In::Positive), q8({114}, Shape{}, DType::U8), f32({}, In::Positive),
                    q8({118}, Shape{}, DType::U8)},
                   1, one});
      v.push_back({"QLinearConv", 10, {},
                   {q8({255, 174, 162, 25, 203, 168, 58, 15, 59}, {1, 1, 3, 3}, DType::U8),
                    f32({}, In::Positive), q8({127}, Shape{}, DType::U8),
                    q8({3, 250, 1, 7}, {1, 1, 2, 2}, DType::I8), f32({}, In::Positive),
                    q8({0}, Shape{}, DType::I8), f32({}, In::Positive), q8({128}, Shape{}, DType::U8)},
                   1, one});
    }
    // Detection and data-dependent selection. NonMaxSuppression runs on the host in a CUDA
    // executor (its inputs downloaded): these cases check that path.
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      auto f32s = [](float x) {
        In i = vals({}, {x});
        i.keep_f32 = true;
        return i;
      };
      v.push_back({"NonMaxSuppression", 11, {}, {flt({2, 7, 4}), flt({2, 3, 7}), ints({3}),
                                                 f32s(0.4f), f32s(-0.5f)}});
      v.push_back({"NonMaxSuppression", 11, {{"center_point_box", attr_i(1)}},
                   {pos({1, 9, 4}), flt({1, 2, 9}), ints({9}, Shape{}), f32s(0.2f)}, 1, all3,
                   "center boxes"});
      // Compress, Unique and Det are host-placed too.
      v.push_back({"Compress", 11, {{"axis", attr_i(0)}}, {flt({4, 3}), bools({4})}});
      v.push_back({"Compress", 11, {}, {flt({2, 3}), bools({5})}, 1, all3, "no axis"});
      v.push_back({"Unique", 11, {},
                   {vals({2, 4}, {1, -2, 1, 0.5f, 3, -2, 0.5f, 1})}, 4});
      v.push_back({"Unique", 11, {{"axis", attr_i(1)}, {"sorted", attr_i(0)}},
                   {vals({2, 4}, {1, 2, 1, 0, 3, 4, 3, 0})}, 4, all3, "columns"});
      v.push_back({"Det", 11, {}, {flt({2, 3, 3})}});
      v.push_back({"NonZero", 13, {}, {vals({2, 3}, {0, 1, -0.f, 2.5f, 0, -3})}});
      // Random generators: host-placed with the CPU kernel's per-node generator, so a seeded node
      // draws the same numbers under both executors (each run_on builds a new kernel from the
      // seed) and agrees element-wise; an unseeded one would not (runtime/cpu/kernels/random.cc).
      for (DType dt : all3) {
        const int64_t code = dt == DType::F32 ? 1 : dt == DType::F16 ? 10 : 16;
        v.push_back({"RandomNormal", 1,
                     {{"shape", attr_ints({3, 5})}, {"mean", attr_f(1)}, {"scale", attr_f(2)},
                      {"seed", attr_f(4)}, {"dtype", attr_i(code)}},
                     {}, 1, {dt}});
        v.push_back({"RandomUniform", 1,
                     {{"shape", attr_ints({4, 3})}, {"low", attr_f(-1)}, {"high", attr_f(2)},
                      {"seed", attr_f(5)}, {"dtype", attr_i(code)}},
                     {}, 1, {dt}});
      }
      v.push_back({"RandomNormalLike", 1, {{"seed", attr_f(6)}}, {flt({2, 3, 4})}});
      v.push_back({"RandomUniformLike", 1, {{"seed", attr_f(7)}, {"high", attr_f(3)}},
                   {flt({5, 4})}});
      v.push_back({"Bernoulli", 15, {{"seed", attr_f(8)}},
                   {vals({2, 4}, {0, 0.25f, 0.5f, 1, 0.9f, 0.1f, 0.75f, 0})}});
      v.push_back({"Multinomial", 7, {{"seed", attr_f(9)}, {"sample_size", attr_i(6)}},
                   {vals({2, 3}, {0, 1, -1, 2, 0.5f, -3})}});
      // RoiAlign, MaxUnpool and BitShift have CUDA kernels.
      v.push_back({"RoiAlign", 16, {{"output_height", attr_i(3)}, {"output_width", attr_i(2)}},
                   {flt({2, 3, 6, 5}), vals({3, 4}, {0, 0, 4, 5, 1.5f, 0.5f, 3, 2.5f, -1, 2, 6, 7}),
                    ints({1, 0, 1})}});
      v.push_back({"RoiAlign", 10,
                   {{"mode", attr_s("max")}, {"sampling_ratio", attr_i(2)},
                    {"spatial_scale", attr_f(0.5f)}},
                   {flt({1, 2, 5, 5}), vals({2, 4}, {0, 0, 8, 8, 2, 1, 5, 9}), ints({0, 0})}, 1,
                   all3, "max, opset 10"});
      v.push_back({"RoiAlignGrad", 1,
                   {{"output_height", attr_i(3)}, {"output_width", attr_i(2)},
                    {"coordinate_transformation_mode", attr_s("output_half_pixel")}},
                   {flt({3, 3, 3, 2}), ints({2, 3, 6, 5}),
                    vals({3, 4}, {0, 0, 4, 5, 1.5f, 0.5f, 3, 2.5f, -1, 2, 6, 7}), ints({1, 0, 1})}});
      v.push_back({"MaxUnpool", 11,
                   {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
                   {flt({1, 2, 2, 2}), ints({5, 7, 13, 15, 16, 19, 25, 31}, {1, 2, 2, 2})}});
      v.push_back({"MaxUnpool", 11, {{"kernel_shape", attr_ints({2})}},
                   {flt({1, 1, 3}), ints({0, 2, 3}, {1, 1, 3}), ints({1, 1, 5})}, 1, all3,
                   "output_shape"});
      In sx = ints({16, 4, 1, 200, 255, 3}, {2, 3}), sy = ints({1, 2, 9});
      sx.int_type = sy.int_type = DType::U8;
      v.push_back({"BitShift", 11, {{"direction", attr_s("LEFT")}}, {sx, sy}, 1, {DType::U8}});
      v.push_back({"BitShift", 11, {{"direction", attr_s("RIGHT")}}, {sx, sy}, 1, {DType::U8},
                   "right"});
    }
    // Signal processing (opset 17): DFT, STFT and their adjoints run on the device as direct
    // sums (runtime/cuda/kernels/signal.cc); the CPU's FFT (radix-2 or Bluestein) is the
    // reference. The window and mel generators are host-only (host scalars in), as Range.
    {
      const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
      v.push_back({"DFT", 17, {}, {flt({2, 8, 1})}});
      v.push_back({"DFT", 17, {{"axis", attr_i(2)}, {"inverse", attr_i(1)}}, {flt({2, 3, 6, 2})},
                   1, all3, "inverse, axis 2"});
      v.push_back({"DFT", 17, {{"onesided", attr_i(1)}}, {flt({3, 12, 1}), ints({10}, Shape{})},
                   1, all3, "onesided, dft_length 10"});
      v.push_back({"STFT", 17, {}, {flt({2, 32, 1}), ints({4}, Shape{}), flt({8})}});
      v.push_back({"DFTGrad", 1, {{"axis", attr_i(1)}}, {flt({2, 8, 2}), flt({2, 8, 1})}});
      v.push_back({"DFTGrad", 1, {{"axis", attr_i(1)}, {"onesided", attr_i(1)}},
                   {flt({3, 6, 2}), flt({3, 12, 1}), ints({10}, Shape{})}, 1, all3,
                   "onesided, dft_length 10"});
      v.push_back({"STFTGrad", 1, {},
                   {flt({2, 7, 5, 2}), flt({2, 32, 1}), ints({4}, Shape{}), flt({8})}, 2});
      // irfft (inverse + onesided), a complex onesided forward, opset 20's axis input, STFT of
      // a complex signal without a window, the adjoints of the inverse and of irfft.
      v.push_back({"DFT", 17, {{"inverse", attr_i(1)}, {"onesided", attr_i(1)}},
                   {flt({2, 5, 2})}, 1, all3, "irfft"});
      v.push_back({"DFT", 17, {{"onesided", attr_i(1)}}, {flt({2, 9, 2})}, 1, all3,
                   "complex onesided, odd length"});
      v.push_back({"DFT", 20, {}, {flt({3, 7, 2, 2}), ints({6}, Shape{}), ints({1}, Shape{})}, 1,
                   all3, "opset 20, axis input 1, dft_length 6"});
      v.push_back({"STFT", 17, {{"onesided", attr_i(0)}},
                   {flt({1, 20, 2}), ints({3}, Shape{}), absent(), ints({6}, Shape{})}, 1, all3,
                   "complex, no window, frame_length 6"});
      v.push_back({"DFTGrad", 1, {{"axis", attr_i(1)}, {"inverse", attr_i(1)}},
                   {flt({2, 6, 2}), flt({2, 6, 2})}, 1, all3, "inverse"});
      v.push_back({"DFTGrad", 1, {{"axis", attr_i(1)}, {"inverse", attr_i(1)}, {"onesided", attr_i(1)}},
                   {flt({2, 8, 1}), flt({2, 5, 2})}, 1, all3, "irfft"});
      v.push_back({"STFTGrad", 1, {{"onesided", attr_i(0)}},
                   {flt({1, 5, 6, 2}), flt({1, 20, 2}), ints({3}, Shape{}), absent(), ints({6}, Shape{})},
                   1, all3, "complex, no window"});
    }
    return v;
  }();
  return all;
}

std::string case_name(const Case& c, DType t) {
  return c.op + (c.label.empty() ? "" : "(" + c.label + ")") + "[" + dtype_name(t) + "]";
}

// Whether the CPU's registry has a kernel for the case in this dtype (the first input's dtype).
bool cpu_runs(const Case& c, const std::vector<Tensor>& inputs) {
  const auto composites = composite_op_types();
  if (std::find(composites.begin(), composites.end(), c.op) != composites.end()) return true;
  DType key = kAnyDType;
  const size_t first = c.op == "Where" ? 1 : 0;
  for (size_t i = first; i < inputs.size(); ++i)
    if (inputs[i].defined()) {
      key = inputs[i].dtype();
      break;
    }
  return default_registry().supports(op_from_name(c.op), Device::CPU, key);
}

}  // namespace

TEST_CASE("every backend agrees with the CPU reference") {
  const bool gpu = cuda::device_count() > 0;
  if (!gpu)
    MESSAGE("SKIPPED the CUDA half: " << cuda::describe_device()
                                      << " (the CPU reference of every case still runs)");
  int ran = 0, compared = 0;
  for (size_t ci = 0; ci < cases().size(); ++ci) {
    const Case& c = cases()[ci];
    for (DType dt : c.dtypes) {
      const std::string name = case_name(c, dt);
      CAPTURE(name);
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        inputs.push_back(make_input(c.inputs[i], dt, 1000 * ci + i + 1));
      if (!cpu_runs(c, inputs)) {
        MESSAGE(name << ": the CPU has no kernel in this dtype; not compared");
        continue;
      }
      const Graph g = single_node_graph(c, inputs);
      std::vector<Tensor> ref;
      REQUIRE_NOTHROW(ref = run_on(Device::CPU, g, inputs));
      REQUIRE(static_cast<int>(ref.size()) == c.outputs);
      ++ran;
      if (!gpu) continue;
      std::vector<Tensor> got;
      REQUIRE_NOTHROW(got = run_on(Device::CUDA, g, inputs));
      ++compared;
      double atol, rtol;
      tolerance(dt, atol, rtol);
      for (int o = 0; o < c.outputs; ++o) {
        CAPTURE(o);
        REQUIRE(got[o].dtype() == ref[o].dtype());
        REQUIRE(got[o].shape() == ref[o].shape());
        const auto a = got[o].to_float_vector(), b = ref[o].to_float_vector();
        const bool exact = !is_floating(ref[o].dtype());
        // The output's own precision bounds the error (a cast to F16 of an F32 case).
        double ot_atol = atol, ot_rtol = rtol;
        if (ref[o].dtype() == DType::F16 || ref[o].dtype() == DType::BF16)
          tolerance(ref[o].dtype(), ot_atol, ot_rtol);
        ot_atol = std::max(ot_atol, atol);
        ot_rtol = std::max(ot_rtol, rtol);
        size_t bad = 0;
        double worst = 0;
        for (size_t k = 0; k < a.size(); ++k) {
          const double d = std::fabs(static_cast<double>(a[k]) - b[k]);
          const bool same_nonfinite = !std::isfinite(a[k]) && !std::isfinite(b[k]) &&
                                      std::isnan(a[k]) == std::isnan(b[k]);
          const bool ok = exact ? a[k] == b[k] || same_nonfinite
                                : same_nonfinite || d <= ot_atol + ot_rtol * std::fabs(b[k]);
          if (!ok) ++bad;
          if (std::isfinite(d)) worst = std::max(worst, d);
        }
        CAPTURE(worst);
        CHECK(bad == 0);
      }
    }
  }
  CHECK(ran > 100);
  if (gpu) CHECK(compared == ran);
  std::cout << "backends agree: " << ran << " CPU reference runs, " << compared
            << " compared with CUDA\n";
}

// Issue #5: "the every-backend-agrees list covers every op in every dtype". Every op of the
// registry (ops.def) has a CUDA kernel and at least one case above in each of F32, F16 and BF16,
// except the ops that do no floating arithmetic (one case in any dtype) and the exemptions
// below, each with its reason.
TEST_CASE("the agreement table covers every op in F32, F16 and BF16") {
  const std::set<OpId> not_floating = {OpId::Not, OpId::And, OpId::Or, OpId::Xor, OpId::Shape,
                                       OpId::Size, OpId::MatMulInteger, OpId::ConvInteger,
                                       OpId::BitShift};
  // Generators run on the host in every executor (their outputs are shapes and constants,
  // uploaded where a device node reads them): no CUDA kernel, no case.
  const std::set<OpId> host_only = {OpId::Constant, OpId::ConstantOfShape, OpId::Range,
                                     // signal generators (opset 17), host-placed by CudaContext
                                     OpId::HannWindow, OpId::HammingWindow, OpId::BlackmanWindow,
                                     OpId::MelWeightMatrix};
  // Control flow runs on the CPU only (runtime/cpu/kernels/control_flow.cc): a device executor
  // refuses a graph with If, Loop or Scan, naming the node.
  const std::set<OpId> cpu_only = {OpId::If, OpId::Loop, OpId::Scan};
  // Placed on the host by CudaContext (their output's length depends on the values): no CUDA
  // kernel; their cases run the CUDA executor's download path (runtime/cuda/README.md).
  // The random generators are host-placed too (one generator per node, the CPU's stream on
  // every backend; a step with one is not captured in a CUDA graph): their seeded cases agree.
  const std::set<OpId> host_placed = {OpId::NonMaxSuppression, OpId::Compress, OpId::Unique,
                                       OpId::Det, OpId::NonZero, OpId::RandomNormal,
                                       OpId::RandomUniform, OpId::RandomNormalLike,
                                       OpId::RandomUniformLike, OpId::Bernoulli,
                                       OpId::Multinomial};
  // FP32 by design: the optimizer ops update FP32 masters from FP32 (unscaled) gradients; the
  // F16/BF16 gradients are widened by UnscaleAndCheck, whose cases cover F16/BF16.
  const std::set<OpId> fp32_only = {OpId::SGDUpdate, OpId::AdamUpdate, OpId::GlobalNormClip};
  // F32 only: cuDNN's deterministic max pooling backward may pick another element than the CPU's
  // first maximum on exact ties, which rounding to F16/BF16 makes likely (runtime/cuda/README.md).
  const std::set<OpId> ties = {OpId::MaxPoolGrad, OpId::GlobalMaxPoolGrad};
  // float32 by the spec (opsets <= 17): the Q-linear ops' scales are tensor(float); their CUDA
  // registration is the host kernel of runtime/cuda/kernels/quantize.cc.
  const std::set<OpId> spec_fp32 = {OpId::QLinearMatMul, OpId::QLinearConv};
  std::map<OpId, std::set<DType>> covered;
  for (const Case& c : cases())
    for (DType dt : c.dtypes) covered[op_from_name(c.op)].insert(dt);
  std::string missing, no_kernel;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    if (host_only.count(op)) continue;
    if (cpu_only.count(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but control flow is CPU only)");
      continue;
    }
    if (host_placed.count(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but placed on the host)");
    } else if (cuda::compiled() && !default_registry().supports_op(op, Device::CUDA)) {
      no_kernel += cat(" ", op_name(op));
    }
    const std::set<DType>& have = covered[op];
    if (fp32_only.count(op) || ties.count(op) || spec_fp32.count(op)) {
      if (!have.count(DType::F32)) missing += cat(" ", op_name(op), "/float32");
      continue;
    }
    if (not_floating.count(op)) {
      if (have.empty()) missing += cat(" ", op_name(op));
      continue;
    }
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
      if (!have.count(dt)) missing += cat(" ", op_name(op), "/", dtype_name(dt));
  }
  CHECK_MESSAGE(no_kernel.empty(), "ops without a CUDA kernel:" << no_kernel);
  CHECK_MESSAGE(missing.empty(), "ops without agreement cases:" << missing);
}
