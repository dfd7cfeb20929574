// Training through fake quantization (train/autodiff/grads/quantize.cc): x -> QuantizeLinear ->
// DequantizeLinear -> MatMul / Gemm, as torch.onnx exports PyTorch QAT models.
//   1. the straight-through estimator: the autodiff graph's dx and dW equal dx̂ · mask and dŴ ·
//      mask computed by hand (mask: the quantized value was not clipped), per tensor and per axis;
//      where W was not clipped, dW is checked against finite differences of the loss in Ŵ (the
//      straight-through estimator is not a derivative: fake quantization is piecewise constant);
//   2. QuantizeLinearGrad at the clipping boundaries (ties round to even);
//   3. what is refused: a QuantizeLinear output read by something other than a matching
//      DequantizeLinear, a DequantizeLinear that does not read a QuantizeLinear;
//   4. a QDQ version of the zoo MLP trains (loss goes down) in FP32 and in FP16 mixed precision,
//      where Q/DQ are painted FP32 and the Gemms FP16, and scale / zero point are not trained.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "node_builder.h"
#include "qdq_model.h"
#include "runtime/executor.h"
#include "train/autodiff/gradient_builder.h"
#include "train/trainer.h"

using namespace oat;
using oat_test::make_node;

namespace {

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

Tensor random_f32(Shape s, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::F32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// fake_quantize(v) and whether v was not clipped, for one element.
struct Fq {
  float value;
  bool pass;
};
Fq fake_quant(float v, float s, int zp, int lo, int hi) {
  const float q = std::nearbyint(v / s) + static_cast<float>(zp);
  const float c = std::min(std::max(q, static_cast<float>(lo)), static_cast<float>(hi));
  return {(c - static_cast<float>(zp)) * s, q >= lo && q <= hi};
}

// loss = Σ (x̂ · Ŵ) ⊙ R with x̂ = fq(x) (per tensor, uint8, zp 128) and Ŵ = fq(W) (per column of
// W [6, 3]: axis 1, int8, zero points {0, 2, -3}).
Graph qdq_matmul_graph() {
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::nullopt});
  g.inputs.push_back(ValueInfo{"R", DType::F32, std::nullopt});
  g.initializers["W"] = random_f32({6, 3}, -1.f, 1.f, 7);
  g.initializers["sx"] = f32({}, {0.02f});
  Tensor zx(DType::U8, {});
  zx.data<uint8_t>()[0] = 128;
  g.initializers["zx"] = zx;
  g.initializers["sw"] = f32({3}, {0.01f, 0.004f, 0.02f});
  g.initializers["zw"] = Tensor::from_vector<int8_t>({3}, {0, 2, -3});
  const std::map<std::string, Attribute> axis1 = {{"axis", int_attr(1)}};
  g.nodes.push_back(make_node("qx", "QuantizeLinear", {"x", "sx", "zx"}, "x_q"));
  g.nodes.push_back(make_node("dqx", "DequantizeLinear", {"x_q", "sx", "zx"}, "x_dq"));
  g.nodes.push_back(make_node("qw", "QuantizeLinear", {"W", "sw", "zw"}, "W_q", axis1));
  g.nodes.push_back(make_node("dqw", "DequantizeLinear", {"W_q", "sw", "zw"}, "W_dq", axis1));
  g.nodes.push_back(make_node("mm", "MatMul", {"x_dq", "W_dq"}, "y"));
  g.nodes.push_back(make_node("mul", "Mul", {"y", "R"}, "yr"));
  g.nodes.push_back(make_node("sum", "ReduceSum", {"yr"}, "loss", {{"keepdims", int_attr(0)}}));
  ValueInfo loss{"loss", DType::F32, std::vector<Dim>{}};
  g.outputs.push_back(loss);
  g.value_info["loss"] = loss;
  return g;
}

}  // namespace

TEST_CASE("fake quantization: dX and dW are the straight-through estimator's, per tensor and per axis") {
  Graph g = qdq_matmul_graph();
  const train::BackwardResult bw = train::build_backward(g, "loss", {"x", "W"});
  REQUIRE(bw.grads.count("x"));
  REQUIRE(bw.grads.count("W"));
  // x in [-4, 4]: x / 0.02 + 128 spans [-72, 328], clipped at both ends of [0, 255].
  const Tensor x = random_f32({4, 6}, -4.f, 4.f, 1), R = random_f32({4, 3}, -1.f, 1.f, 2);
  const Tensor& W = g.initializers.at("W");
  Executor ex(g);
  auto out = ex.run({{"x", x}, {"R", R}, {bw.seed, f32({}, {1.f})}},
                    {bw.grads.at("x"), bw.grads.at("W")});
  const Tensor& dx = out.at(bw.grads.at("x"));
  const Tensor& dw = out.at(bw.grads.at("W"));
  // By hand: x̂, Ŵ and the masks; dx̂ = R·Ŵᵀ, dŴ = x̂ᵀ·R.
  const float sw[] = {0.01f, 0.004f, 0.02f};
  const int zw[] = {0, 2, -3};
  std::vector<Fq> fx, fw;
  for (int64_t i = 0; i < 24; ++i) fx.push_back(fake_quant(x.data<float>()[i], 0.02f, 128, 0, 255));
  for (int64_t i = 0; i < 18; ++i)
    fw.push_back(fake_quant(W.data<float>()[i], sw[i % 3], zw[i % 3], -128, 127));
  int clipped = 0, passed = 0;
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t k = 0; k < 6; ++k) {
      double g = 0;
      for (int64_t n = 0; n < 3; ++n) g += R.data<float>()[m * 3 + n] * fw[k * 3 + n].value;
      const Fq& f = fx[m * 6 + k];
      (f.pass ? passed : clipped) += 1;
      CAPTURE(m);
      CAPTURE(k);
      CHECK(dx.data<float>()[m * 6 + k] == doctest::Approx(f.pass ? g : 0.0).epsilon(1e-5));
      if (!f.pass) CHECK(dx.data<float>()[m * 6 + k] == 0.f);
    }
  CHECK(clipped >= 3);
  CHECK(passed >= 3);
  int w_clipped = 0;
  for (int64_t k = 0; k < 6; ++k)
    for (int64_t n = 0; n < 3; ++n) {
      double g = 0;
      for (int64_t m = 0; m < 4; ++m) g += fx[m * 6 + k].value * R.data<float>()[m * 3 + n];
      const Fq& f = fw[k * 3 + n];
      w_clipped += !f.pass;
      CHECK(dw.data<float>()[k * 3 + n] == doctest::Approx(f.pass ? g : 0.0).epsilon(1e-5));
    }
  CHECK(w_clipped >= 1);  // |W| up to 1 against 0.004 · 127 = 0.5 in column 1
  // Where W was not clipped, dW = dŴ, the true derivative of the loss in Ŵ (the MatMul side):
  // finite differences of the loss with Ŵ fed directly (a graph without W's Q/DQ pair) agree.
  Graph gh = qdq_matmul_graph();
  gh.nodes.erase(gh.nodes.begin() + 2, gh.nodes.begin() + 4);  // qw, dqw
  gh.nodes[2].inputs[1] = "Wh";
  gh.inputs.push_back(ValueInfo{"Wh", DType::F32, std::nullopt});
  Executor eh(gh);
  Tensor wh(DType::F32, {6, 3});
  for (int64_t i = 0; i < 18; ++i) wh.data<float>()[i] = fw[i].value;
  auto loss_at = [&](int64_t i, float h) {
    Tensor w = wh.clone();
    w.data<float>()[i] += h;
    return static_cast<double>(eh.run({{"x", x}, {"R", R}, {"Wh", w}})[0].data<float>()[0]);
  };
  int compared = 0;
  for (int64_t i = 0; i < 18; ++i) {
    if (!fw[i].pass) continue;
    const double h = 1.0 / 64;  // the loss is linear in Ŵ: only float rounding remains
    const double fd = (loss_at(i, static_cast<float>(h)) - loss_at(i, static_cast<float>(-h))) / (2 * h);
    CAPTURE(i);
    CHECK(dw.data<float>()[i] == doctest::Approx(fd).epsilon(1e-3).scale(1e-3));
    ++compared;
  }
  CHECK(compared >= 10);
  // scale and zero point are not trained: they get no gradient even when asked for.
  Graph g2 = qdq_matmul_graph();
  const train::BackwardResult bw2 = train::build_backward(g2, "loss", {"W", "sx", "sw"});
  CHECK(bw2.grads.count("W") == 1);
  CHECK(bw2.grads.count("sx") == 0);
  CHECK(bw2.grads.count("sw") == 0);
}

TEST_CASE("QuantizeLinearGrad passes dY exactly where the rounded value is inside [qmin, qmax]") {
  // scale 1, uint8 zero point 0: rint(x) must be in [0, 255]; ties round to even.
  const std::vector<float> xs = {-0.6f, -0.5f, 0.f, 254.5f, 255.4f, 255.5f, 256.f, 100.f};
  const std::vector<float> pass = {0, 1, 1, 1, 1, 0, 0, 1};
  Graph g;
  g.opsets[""] = 17;
  g.opsets[kInternalDomain] = 1;
  Node n = make_node("g", "QuantizeLinearGrad", {"dy", "x", "s"}, "dx", {}, 1);
  n.domain = kInternalDomain;
  g.nodes.push_back(n);
  for (const char* v : {"dy", "x", "s"}) g.inputs.push_back(ValueInfo{v, DType::F32, std::nullopt});
  g.outputs.push_back(ValueInfo{"dx", DType::F32, std::nullopt});
  Executor ex(g);
  const Tensor dy = random_f32({8}, 0.5f, 2.f, 3);
  const Tensor dx = ex.run({{"dy", dy}, {"x", f32({8}, xs)}, {"s", f32({}, {1.f})}})[0];
  for (int i = 0; i < 8; ++i) {
    CAPTURE(xs[i]);
    CHECK(dx.data<float>()[i] == (pass[i] ? dy.data<float>()[i] : 0.f));
  }
}

TEST_CASE("training through quantization outside the fake-quantization pattern is refused by name") {
  {  // the quantized value read by a Cast: its gradient would be in the wrong units
    Graph g = qdq_matmul_graph();
    Attribute to = int_attr(1);
    g.nodes.insert(g.nodes.begin() + 1, make_node("peek", "Cast", {"x_q"}, "x_qf", {{"to", to}}));
    g.nodes.push_back(make_node("mul2", "Mul", {"x_qf", "x"}, "extra"));
    g.nodes.push_back(make_node("sum2", "ReduceSum", {"extra"}, "extra_sum", {{"keepdims", int_attr(0)}}));
    g.nodes.push_back(make_node("total", "Add", {"loss", "extra_sum"}, "total"));
    CHECK_THROWS_WITH_AS(train::build_backward(g, "total", {"x"}),
                         doctest::Contains("node 'qx' (QuantizeLinear, opset 13): training through "
                                           "QuantizeLinear needs every reader of 'x_q' to be a "
                                           "DequantizeLinear with the same scale"),
                         Error);
  }
  {  // a DequantizeLinear with another scale than its QuantizeLinear
    Graph g = qdq_matmul_graph();
    g.initializers["sx2"] = f32({}, {0.03f});
    g.nodes[1].inputs[1] = "sx2";
    CHECK_THROWS_WITH_AS(train::build_backward(g, "loss", {"x"}),
                         doctest::Contains("node 'dqx' (DequantizeLinear, opset 13) reads it"), Error);
  }
  {  // the same values under another name are accepted (torch writes one Constant per node)
    Graph g = qdq_matmul_graph();
    g.initializers["sx_copy"] = f32({}, {0.02f});
    g.nodes[1].inputs[1] = "sx_copy";
    CHECK_NOTHROW(train::build_backward(g, "loss", {"x"}));
  }
}


TEST_CASE("a QDQ MLP trains in FP32 and in FP16 mixed precision; Q/DQ stay FP32, scales fixed") {
  const Graph model = oat_test::qdq_mlp();
  const train::Dataset data = oat_test::band_data(256, 5);
  for (DType precision : {DType::F32, DType::F16}) {
    const std::string pname = dtype_name(precision);
    CAPTURE(pname);
    train::TrainerConfig cfg;
    cfg.batch = 32;
    cfg.epochs = 3;
    cfg.progress = false;
    cfg.graph.precision = precision;
    if (precision == DType::F16) cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
    train::Trainer t(model, cfg);
    std::vector<double> losses;
    t.on_step = [&](int64_t, double l) { losses.push_back(l); };
    const double before = t.evaluate(data).loss;
    t.fit(data, nullptr);
    const double after = t.evaluate(data).loss;
    MESSAGE(pname, ": loss ", before, " -> ", after);
    CHECK(after < 0.7 * before);
    const train::TrainingGraph& tg = t.training_graph();
    // Only the Gemms' weights and biases are parameters: no scale, no zero point.
    CHECK(tg.params.size() == 6);
    for (const auto& p : tg.params) CHECK(p.find("scale") == std::string::npos);
    if (precision != DType::F16) continue;
    size_t q = 0;
    for (const auto& np : tg.plan.nodes) {
      if (np.op_type == "QuantizeLinear" || np.op_type == "DequantizeLinear" ||
          np.op_type == "QuantizeLinearGrad") {
        CAPTURE(np.node);
        CHECK(np.dtype == DType::F32);
        ++q;
      }
      if (np.op_type == "Gemm") CHECK(np.dtype == DType::F16);
    }
    // 6 Q/DQ pairs; STE gradients for the 3 weights and the activations of fc2 and fc3 (fc1's
    // input is the data, which needs no gradient).
    CHECK(q == 12 + 5);
  }
}
