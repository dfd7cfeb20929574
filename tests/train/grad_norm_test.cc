// Gradients of BatchNormalization (training and inference mode, legacy opsets), LayerNormalization,
// InstanceNormalization and LpNormalization: double-precision finite-difference checks, the float
// kernels on tensors big enough for their threaded paths against direct loops in double, and
// LpNormalizationGrad's hand values (zero lanes, sign(0)).
#include <cmath>
#include <random>

#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;
using oat::test::fixed;

namespace {

Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute flt(float v) { return train::GradientContext::attr_float(v); }

// BatchNormalization over X [N, C, ...] with random scale/B and fixed running mean/var.
GradCheckCase batch_norm(Shape x, int64_t opset, int num_outputs) {
  const int64_t C = x[1];
  GradCheckCase c;
  c.op = "BatchNormalization";
  c.opset = opset;
  c.num_outputs = num_outputs;
  std::vector<double> mean(C), var(C);
  for (int64_t k = 0; k < C; ++k) {
    mean[k] = 0.1 * static_cast<double>(k) - 0.05;
    var[k] = 0.5 + 0.3 * static_cast<double>(k);
  }
  c.inputs = {in(std::move(x)), in({C}, 0.5, 1.5), in({C}),
              fixed(Tensor::from_vector<double>({C}, mean)),
              fixed(Tensor::from_vector<double>({C}, var))};
  return c;
}

Tensor random_f32(const Shape& s, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Runs one gradient op of the internal domain on float inputs; returns outputs 0..2.
std::vector<Tensor> run_grad_op(const std::string& op, std::map<std::string, Attribute> attrs,
                                const std::vector<Tensor>& inputs) {
  Graph g;
  g.opsets[""] = 17;
  Node n;
  n.name = "g";
  n.op_type = op;
  n.domain = kInternalDomain;
  n.op = op_from_name(op);
  n.opset = 1;
  n.attrs = std::move(attrs);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "i" + std::to_string(i);
    n.inputs.push_back(name);
    g.inputs.push_back(ValueInfo{name, inputs[i].dtype(), {}});
    feeds[name] = inputs[i];
  }
  n.outputs = {"dx", "dscale", "dbias"};
  g.nodes.push_back(n);
  Executor ex(g);
  auto out = ex.run(feeds, {"dx", "dscale", "dbias"});
  return {out.at("dx"), out.at("dscale"), out.at("dbias")};
}

double worst_rel(const std::vector<double>& ref, const Tensor& got) {
  REQUIRE(static_cast<int64_t>(ref.size()) == got.numel());
  double w = 0;
  for (size_t j = 0; j < ref.size(); ++j)
    w = std::max(w, std::abs(ref[j] - got.item_as_double(j)) / (1 + std::abs(ref[j])));
  return w;
}

// Training-mode BatchNorm (instance=false) or InstanceNorm (instance=true) gradient of
// X [N, C, S] in double by the textbook formula, one group (channel or plane) at a time.
void norm_grad_reference(const Tensor& x, const Tensor& dy, const Tensor& scale, bool instance,
                         double eps, std::vector<double>& dx, std::vector<double>& dscale,
                         std::vector<double>& dbias) {
  const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / (N * C);
  dx.assign(x.numel(), 0.0);
  dscale.assign(C, 0.0);
  dbias.assign(C, 0.0);
  for (int64_t grp = 0; grp < (instance ? N * C : C); ++grp) {
    const int64_t c = grp % C;
    std::vector<int64_t> idx;
    for (int64_t n = 0; n < N; ++n)
      if (!instance || n == grp / C)
        for (int64_t s = 0; s < S; ++s) idx.push_back((n * C + c) * S + s);
    const double m = static_cast<double>(idx.size());
    double mu = 0, var = 0, mg = 0, mgx = 0;
    for (int64_t i : idx) mu += x.item_as_double(i) / m;
    for (int64_t i : idx) var += std::pow(x.item_as_double(i) - mu, 2) / m;
    const double sigma = std::sqrt(var + eps);
    for (int64_t i : idx) {
      const double xhat = (x.item_as_double(i) - mu) / sigma, g = dy.item_as_double(i);
      mg += g / m;
      mgx += g * xhat / m;
      dscale[c] += g * xhat;
      dbias[c] += g;
    }
    const double gamma = scale.item_as_double(c);
    for (int64_t i : idx) {
      const double xhat = (x.item_as_double(i) - mu) / sigma;
      dx[i] = gamma / sigma * (dy.item_as_double(i) - mg - xhat * mgx);
    }
  }
}

}  // namespace

TEST_CASE("gradients: BatchNormalization in training mode goes through the batch statistics") {
  SUBCASE("opset 15, training_mode=1, outputs Y, running_mean, running_var") {
    GradCheckCase c = batch_norm({4, 3, 2, 2}, 15, 3);
    c.attrs["training_mode"] = int1(1);
    c.attrs["momentum"] = flt(0.9f);
    test::check_gradients(c);
  }
  SUBCASE("3-D input [N, C, L], epsilon 1e-3") {
    GradCheckCase c = batch_norm({4, 2, 3}, 15, 3);
    c.attrs["training_mode"] = int1(1);
    c.attrs["epsilon"] = flt(1e-3f);
    test::check_gradients(c);
  }
  SUBCASE("2-D input [N, C] (BatchNorm1d on features)") {
    GradCheckCase c = batch_norm({6, 3}, 15, 3);
    c.attrs["training_mode"] = int1(1);
    test::check_gradients(c);
  }
  SUBCASE("opset 9: training because the statistics outputs are present") {
    test::check_gradients(batch_norm({4, 3, 2, 2}, 9, 5));
  }
}

TEST_CASE("gradients: BatchNormalization in inference mode treats the statistics as constants") {
  SUBCASE("opset 15, training_mode=0") {
    GradCheckCase c = batch_norm({2, 3, 2, 2}, 15, 1);
    c.attrs["training_mode"] = int1(0);
    test::check_gradients(c);
  }
  SUBCASE("opset 9, one output") { test::check_gradients(batch_norm({2, 3, 3}, 9, 1)); }
  SUBCASE("opset 7, spatial=0: statistics per (c, d) element") {
    GradCheckCase c;
    c.op = "BatchNormalization";
    c.opset = 7;
    c.attrs["spatial"] = int1(0);
    std::vector<double> mean(6), var(6);
    for (int k = 0; k < 6; ++k) {
      mean[k] = 0.05 * k;
      var[k] = 0.4 + 0.1 * k;
    }
    c.inputs = {in({2, 3, 2}), in({3, 2}, 0.5, 1.5), in({3, 2}),
                fixed(Tensor::from_vector<double>({3, 2}, mean)),
                fixed(Tensor::from_vector<double>({3, 2}, var))};
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: BatchNormalization in inference mode reaches computed mean and var inputs") {
  // tf2onnx's Keras LayerNormalization: the statistics are values of the graph, not
  // initializers, so dμ = −γ·dβ/σ and dvar = −½·γ·dγ/(var + ε) flow back to them.
  SUBCASE("opset 15, training_mode=0") {
    GradCheckCase c = batch_norm({2, 3, 2, 2}, 15, 1);
    c.attrs["training_mode"] = int1(0);
    c.inputs[3] = in({3}, -0.5, 0.5);
    c.inputs[4] = in({3}, 0.3, 1.5);
    test::check_gradients(c);
  }
  SUBCASE("opset 9, rows as channels ([1, rows, D] as tf2onnx reshapes), epsilon 1e-3") {
    GradCheckCase c = batch_norm({1, 4, 5}, 9, 1);
    c.attrs["epsilon"] = flt(1e-3f);
    c.inputs[3] = in({4}, -0.5, 0.5);
    c.inputs[4] = in({4}, 0.3, 1.5);
    test::check_gradients(c);
  }
  SUBCASE("opset 7, spatial=0: per-element statistics") {
    GradCheckCase c;
    c.op = "BatchNormalization";
    c.opset = 7;
    c.attrs["spatial"] = int1(0);
    c.inputs = {in({2, 3, 2}), in({3, 2}, 0.5, 1.5), in({3, 2}), in({3, 2}, -0.5, 0.5),
                in({3, 2}, 0.3, 1.5)};
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: LayerNormalization") {
  auto layer_norm = [](Shape x, int64_t axis, Shape scale, bool bias, int outputs) {
    GradCheckCase c;
    c.op = "LayerNormalization";
    c.attrs["axis"] = int1(axis);
    c.num_outputs = outputs;
    c.inputs = {in(std::move(x)), in(scale, 0.5, 1.5)};
    if (bias) c.inputs.push_back(in(scale));
    return c;
  };
  SUBCASE("last axis, with bias") {
    test::check_gradients(layer_norm({2, 3, 4}, -1, {4}, true, 1));
  }
  SUBCASE("axis 1 over [3, 4], no bias") {
    test::check_gradients(layer_norm({2, 3, 4}, 1, {3, 4}, false, 1));
  }
  SUBCASE("Scale [4] broadcast over the normalised [3, 4]") {
    test::check_gradients(layer_norm({2, 3, 4}, 1, {4}, true, 1));
  }
  SUBCASE("Mean and InvStdDev outputs reused by the gradient") {
    GradCheckCase c = layer_norm({3, 5}, -1, {5}, true, 3);
    c.attrs["epsilon"] = flt(1e-3f);
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: InstanceNormalization") {
  auto instance_norm = [](Shape x) {
    GradCheckCase c;
    c.op = "InstanceNormalization";
    const int64_t C = x[1];
    c.inputs = {in(std::move(x)), in({C}, 0.5, 1.5), in({C})};
    return c;
  };
  SUBCASE("[2, 3, 4]") { test::check_gradients(instance_norm({2, 3, 4})); }
  SUBCASE("[2, 2, 2, 3]") { test::check_gradients(instance_norm({2, 2, 2, 3})); }
}

TEST_CASE("BatchNormalizationGrad kernel: float, threaded, against the formula in double") {
  std::mt19937 rng(11);
  for (bool instance : {false, true}) {
    CAPTURE(instance);
    Tensor x = random_f32({8, 5, 31, 37}, rng, -2.0f, 3.0f);  // > 32768 elements: threaded
    Tensor dy = random_f32(x.shape(), rng);
    Tensor scale = random_f32({5}, rng, 0.5f, 1.5f);
    std::map<std::string, Attribute> attrs = {{"training_mode", int1(1)}, {"epsilon", flt(1e-5f)}};
    if (instance) attrs["instance"] = int1(1);
    auto out = run_grad_op("BatchNormalizationGrad", attrs, {dy, x, scale});
    std::vector<double> dx, ds, db;
    norm_grad_reference(x, dy, scale, instance, 1e-5, dx, ds, db);
    CHECK(worst_rel(dx, out[0]) < 1e-4);
    CHECK(worst_rel(ds, out[1]) < 1e-3);
    CHECK(worst_rel(db, out[2]) < 1e-3);
  }
}

TEST_CASE("LayerNormalizationGrad kernel: float, threaded rows, against the formula in double") {
  std::mt19937 rng(5);
  const int64_t rows = 96, n = 257;
  Tensor x = random_f32({4, 24, n}, rng, -2.0f, 3.0f);
  Tensor dy = random_f32(x.shape(), rng);
  Tensor scale = random_f32({n}, rng, 0.5f, 1.5f);
  auto out = run_grad_op("LayerNormalizationGrad", {{"axis", int1(-1)}}, {dy, x, scale});
  std::vector<double> dx(x.numel()), ds(n, 0.0), db(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0, mg = 0, mgx = 0;
    for (int64_t k = 0; k < n; ++k) mu += x.item_as_double(r * n + k) / n;
    for (int64_t k = 0; k < n; ++k) var += std::pow(x.item_as_double(r * n + k) - mu, 2) / n;
    const double sigma = std::sqrt(var + 1e-5);
    auto xhat = [&](int64_t k) { return (x.item_as_double(r * n + k) - mu) / sigma; };
    for (int64_t k = 0; k < n; ++k) {
      const double g = dy.item_as_double(r * n + k) * scale.item_as_double(k);
      mg += g / n;
      mgx += g * xhat(k) / n;
      ds[k] += dy.item_as_double(r * n + k) * xhat(k);
      db[k] += dy.item_as_double(r * n + k);
    }
    for (int64_t k = 0; k < n; ++k) {
      const double g = dy.item_as_double(r * n + k) * scale.item_as_double(k);
      dx[r * n + k] = (g - mg - xhat(k) * mgx) / sigma;
    }
  }
  CHECK(worst_rel(dx, out[0]) < 1e-4);
  CHECK(worst_rel(ds, out[1]) < 1e-4);
  CHECK(worst_rel(db, out[2]) < 1e-4);
}

TEST_CASE("BatchNormalization gradient: a gradient into the running statistics is refused") {
  Graph g;
  g.opsets[""] = 15;
  Node n;
  n.name = "bn0";
  n.op_type = "BatchNormalization";
  n.op = OpId::BatchNormalization;
  n.opset = 15;
  n.attrs["training_mode"] = int1(1);
  n.inputs = {"x", "s", "b", "m", "v"};
  n.outputs = {"y", "rm", "rv"};
  g.nodes.push_back(n);
  Node add;
  add.name = "uses_stats";
  add.op_type = "ReduceSum";
  add.op = OpId::ReduceSum;
  add.opset = 15;
  add.inputs = {"rm"};
  add.outputs = {"loss"};
  g.nodes.push_back(add);
  for (const char* v : {"x", "s", "b", "m", "v"}) g.inputs.push_back(ValueInfo{v, DType::F32, {}});
  CHECK_THROWS_WITH_AS(train::build_backward(g, "loss", {"x"}),
                       doctest::Contains("node 'bn0' (BatchNormalization, opset 15): a gradient "
                                         "flows into output 1 ('rm')"),
                       Error);
}

TEST_CASE("gradients: LRN, MeanVarianceNormalization and GroupNormalization (their expansions)") {
  auto c = [](const std::string& op, Shape s, std::map<std::string, Attribute> attrs) {
    oat::test::GradCheckCase g;
    g.op = op;
    g.opset = 13;
    g.inputs = {in(std::move(s))};
    g.attrs = std::move(attrs);
    g.declare_shapes = true;  // the expansions read X's rank
    return g;
  };
  auto i1 = [](int64_t v) { return train::GradientContext::attr_int(v); };
  auto f1 = [](float v) {
    Attribute a;
    a.kind = Attribute::Kind::Float;
    a.f = v;
    return a;
  };
  for (int64_t size : {2, 3})
    oat::test::check_gradients(
        c("LRN", {2, 5, 3, 2}, {{"size", i1(size)}, {"alpha", f1(0.3f)}, {"bias", f1(1.2f)}}));
  oat::test::check_gradients(c("MeanVarianceNormalization", {2, 3, 2, 4}, {}));
  for (int64_t opset : {18, 21}) {  // scale and bias per group, then per channel
    oat::test::GradCheckCase g = c("GroupNormalization", {2, 4, 3}, {{"num_groups", i1(2)}});
    g.opset = opset;
    const int64_t k = opset == 18 ? 2 : 4;
    g.inputs.push_back(in({k}));
    g.inputs.push_back(in({k}));
    oat::test::check_gradients(g);
  }
  oat::test::check_gradients(c("MeanVarianceNormalization", {2, 3, 2, 4},
                               {{"axes", train::GradientContext::attr_ints({1, 3})}}));
}

TEST_CASE("gradients: LpNormalization") {
  auto lp = [](Shape x, int64_t axis, int64_t p) {
    GradCheckCase c;
    c.op = "LpNormalization";
    c.opset = 1;
    c.attrs["axis"] = int1(axis);
    c.attrs["p"] = int1(p);
    c.inputs = {in(std::move(x))};
    if (p == 1) c.kinks = {0.0};  // |x| has no derivative at 0
    return c;
  };
  SUBCASE("p = 2, last axis") { test::check_gradients(lp({3, 5}, -1, 2)); }
  SUBCASE("p = 2, axis 0") { test::check_gradients(lp({4, 3}, 0, 2)); }
  SUBCASE("p = 1, middle axis") { test::check_gradients(lp({2, 4, 3}, 1, 1)); }
  SUBCASE("p = 1, last axis") { test::check_gradients(lp({3, 6}, -1, 1)); }
  SUBCASE("defaults (axis -1, p 2)") {
    GradCheckCase c;
    c.op = "LpNormalization";
    c.opset = 1;
    c.inputs = {in({2, 2, 3})};
    test::check_gradients(c);
  }
}

TEST_CASE("LpNormalizationGrad: hand values, sign(0) = 0, and a zero lane gives 0, not NaN") {
  auto check = [](const Tensor& got, const std::vector<double>& want, double tol) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    for (size_t j = 0; j < want.size(); ++j) {
      CAPTURE(j);
      CHECK(std::isfinite(got.item_as_double(static_cast<int64_t>(j))));
      CHECK(got.item_as_double(static_cast<int64_t>(j)) == doctest::Approx(want[j]).epsilon(tol));
    }
  };
  // loss = Σ y, so dY = 1.  p = 2, x = [3, 4]: n = 5, y = [.6, .8], Σ dY⊙y = 1.4,
  // dX = (1 − y·1.4) / 5 = [0.032, −0.024].  p = 1, x = [1, −3]: n = 4, Σ dY⊙y = −0.5,
  // dX = (1 − sign(x)·(−0.5)) / 4 = [0.375, 0.125]; x = [0, 2]: n = 2, Σ dY⊙y = 1,
  // dX = (1 − [0, 1]) / 2 = [0.5, 0].
  for (DType dt : {DType::F64, DType::F32}) {
    CAPTURE(dtype_name(dt));
    const double tol = dt == DType::F64 ? 1e-12 : 1e-6;
    const Tensor x2 = cast_tensor(Tensor::from_vector<double>({2, 2}, {0, 0, 3, 4}), dt);
    check(test::sum_gradient("LpNormalization", x2, {{"p", int1(2)}}, 1), {0, 0, 0.032, -0.024},
          tol);
    const Tensor x1 =
        cast_tensor(Tensor::from_vector<double>({3, 2}, {0, 0, 1, -3, 0, 2}), dt);
    check(test::sum_gradient("LpNormalization", x1, {{"p", int1(1)}}, 1),
          {0, 0, 0.375, 0.125, 0.5, 0}, tol);
  }
}
