// The loss scaler's rules (PyTorch GradScaler + DeepSpeed hysteresis) and the UnscaleAndCheck
// kernel that feeds it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "runtime/executor.h"
#include "train/loss_scaler.h"

using namespace oat;
using train::LossScaleMode;
using train::LossScaler;
using train::LossScalerConfig;

namespace {

LossScalerConfig dynamic(int64_t interval, int64_t hysteresis = 1) {
  LossScalerConfig c;
  c.mode = LossScaleMode::Dynamic;
  c.growth_interval = interval;
  c.hysteresis = hysteresis;
  return c;
}

// Runs one UnscaleAndCheck node on (inv_scale, grads...).
std::vector<Tensor> unscale(const Tensor& inv, const std::vector<Tensor>& grads) {
  Graph g;
  g.opsets[""] = 17;
  g.opsets[kInternalDomain] = 1;
  Node n;
  n.name = "unscale";
  n.op_type = "UnscaleAndCheck";
  n.op = op_from_name(n.op_type);
  n.domain = kInternalDomain;
  n.opset = 1;
  std::map<std::string, Tensor> feeds{{"inv", inv}};
  n.inputs.push_back("inv");
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string name = "g" + std::to_string(i);
    feeds[name] = grads[i];
    n.inputs.push_back(name);
  }
  for (size_t i = 0; i <= grads.size(); ++i) n.outputs.push_back("o" + std::to_string(i));
  for (const auto& [name, t] : feeds) {
    ValueInfo v;
    v.name = name;
    v.dtype = t.dtype();
    g.inputs.push_back(v);
  }
  for (const auto& o : n.outputs) {
    ValueInfo v;
    v.name = o;
    g.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  Executor exec(g);
  return exec.run(feeds);
}

}  // namespace

TEST_CASE("loss scaler: PyTorch's dynamic rules (backoff on overflow, growth after the interval)") {
  LossScaler s(dynamic(3));
  CHECK(s.scale() == 65536.0);
  CHECK(s.checks_overflow());
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 65536.0);
  CHECK(s.update(false));  // third clean step in a row: grow
  CHECK(s.scale() == 131072.0);
  CHECK(s.state().growth_tracker == 0);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK_FALSE(s.update(true));  // overflow: skipped, halved, tracker reset
  CHECK(s.scale() == 65536.0);
  CHECK(s.state().growth_tracker == 0);
  CHECK(s.state().skipped_steps == 1);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 65536.0);  // the two clean steps before the overflow no longer count
  CHECK(s.update(false));
  CHECK(s.scale() == 131072.0);
}

TEST_CASE("loss scaler: bounds, hysteresis, static and none") {
  LossScalerConfig c = dynamic(1);
  c.init_scale = 4;
  c.min_scale = 2;
  c.max_scale = 8;
  LossScaler b(c);
  b.update(true);
  b.update(true);
  CHECK(b.scale() == 2.0);  // min bound
  for (int i = 0; i < 5; ++i) b.update(false);
  CHECK(b.scale() == 8.0);  // max bound

  // Hysteresis 3: back off only on the third overflow in a row; every overflow is skipped.
  LossScaler h(dynamic(100, 3));
  CHECK_FALSE(h.update(true));
  CHECK_FALSE(h.update(true));
  CHECK(h.scale() == 65536.0);
  CHECK_FALSE(h.update(true));
  CHECK(h.scale() == 32768.0);
  CHECK_FALSE(h.update(true));  // still in an overflow run: back off again
  CHECK(h.scale() == 16384.0);
  CHECK(h.update(false));        // a clean step restores the tolerance
  CHECK_FALSE(h.update(true));
  CHECK(h.scale() == 16384.0);
  CHECK(h.state().skipped_steps == 5);

  LossScalerConfig sc;
  train::parse_loss_scale("128", sc);
  CHECK(sc.mode == LossScaleMode::Static);
  LossScaler st(sc);
  CHECK(st.scale() == 128.0);
  CHECK_FALSE(st.update(true));  // skipped, but the scale stays
  for (int i = 0; i < 3000; ++i) st.update(false);
  CHECK(st.scale() == 128.0);
  CHECK(st.state().skipped_steps == 1);

  LossScaler none{LossScalerConfig{}};
  CHECK(none.scale() == 1.0);
  CHECK_FALSE(none.checks_overflow());
  CHECK(none.update(true));
}

TEST_CASE("loss scaler: bad settings and --loss-scale values are refused with the option's name") {
  LossScalerConfig c;
  CHECK_THROWS_WITH_AS(train::parse_loss_scale("dynamix", c), doctest::Contains("--loss-scale 'dynamix'"), Error);
  CHECK_THROWS_AS(train::parse_loss_scale("-4", c), Error);
  CHECK_THROWS_AS(train::parse_loss_scale("0", c), Error);
  CHECK_THROWS_AS(train::parse_loss_scale("inf", c), Error);
  CHECK_THROWS_AS(train::parse_loss_scale("12abc", c), Error);
  auto refused = [](LossScalerConfig bad, const char* what) {
    CAPTURE(what);
    CHECK_THROWS_WITH_AS(LossScaler{bad}, doctest::Contains(what), Error);
  };
  LossScalerConfig d = dynamic(10);
  LossScalerConfig x = d;
  x.growth_factor = 1.0;
  refused(x, "--growth-factor");
  x = d;
  x.backoff_factor = 1.5;
  refused(x, "--backoff-factor");
  x = d;
  x.growth_interval = 0;
  refused(x, "--growth-interval");
  x = d;
  x.hysteresis = 0;
  refused(x, "--hysteresis");
  x = d;
  x.init_scale = -1;
  refused(x, "--init-scale");
  x = d;
  x.min_scale = 10;
  x.max_scale = 5;
  refused(x, "--max-scale");
  x = d;
  x.max_scale = 1000;  // init 65536 above it
  refused(x, "outside [--min-scale");
}

TEST_CASE("loss scaler: state round-trips through JSON and refuses another mode's state") {
  LossScaler a(dynamic(4, 2));
  a.update(true);
  a.update(true);
  a.update(false);
  a.update(false);
  LossScaler b(dynamic(4, 2));
  b.load_json(a.to_json(), "ckpt");
  CHECK(b.scale() == a.scale());
  CHECK(b.state().growth_tracker == 2);
  CHECK(b.state().hysteresis_left == 2);
  CHECK(b.state().skipped_steps == 2);
  LossScalerConfig sc;
  sc.mode = LossScaleMode::Static;
  LossScaler st(sc);
  CHECK_THROWS_WITH_AS(st.load_json(a.to_json(), "ckpt/checkpoint.json"),
                       doctest::Contains("loss scaling is 'dynamic' but this run uses 'static'"), Error);
  CHECK_THROWS_WITH_AS(b.load_json("{\"mode\": \"dynamic\"}", "ckpt"),
                       doctest::Contains("malformed loss scaler state"), Error);
}

TEST_CASE("UnscaleAndCheck: one pass unscales every gradient to FP32 and flags Inf/NaN") {
  const float inv = 1.0f / 1024.0f;
  Tensor a = Tensor::from_vector<float>({3}, {1024.0f, -2048.0f, 3.0f});
  Tensor h = cast_tensor(Tensor::from_vector<float>({2}, {512.0f, 0.25f}), DType::F16);
  auto out = unscale(Tensor::scalar<float>(inv), {a, h});
  REQUIRE(out.size() == 3);
  CHECK(out[0].dtype() == DType::F32);
  CHECK(out[0].data<float>()[0] == 1.0f);
  CHECK(out[0].data<float>()[1] == -2.0f);
  CHECK(out[0].data<float>()[2] == 3.0f / 1024.0f);
  CHECK(out[1].dtype() == DType::F32);  // F16 gradients come out widened
  CHECK(out[1].data<float>()[0] == 0.5f);
  CHECK(out[1].data<float>()[1] == 0.25f / 1024.0f);
  CHECK(out[2].dtype() == DType::Bool);
  CHECK(out[2].data<bool>()[0] == false);

  // An Inf in the second tensor, a NaN alone, and a large threaded tensor with one Inf at the end.
  Tensor inf_h = cast_tensor(Tensor::from_vector<float>({2}, {1.0f, 70000.0f}), DType::F16);  // > 65504
  CHECK(unscale(Tensor::scalar<float>(inv), {a, inf_h})[2].data<bool>()[0]);
  Tensor nan = Tensor::from_vector<float>({1}, {std::numeric_limits<float>::quiet_NaN()});
  CHECK(unscale(Tensor::scalar<float>(1.0f), {nan})[1].data<bool>()[0]);
  Tensor big = Tensor::zeros(DType::F32, {200000});
  CHECK_FALSE(unscale(Tensor::scalar<float>(inv), {big})[1].data<bool>()[0]);
  big.data<float>()[199999] = std::numeric_limits<float>::infinity();
  CHECK(unscale(Tensor::scalar<float>(inv), {big})[1].data<bool>()[0]);

  // F64 for double-precision graphs.
  auto d = unscale(Tensor::scalar<double>(0.5), {Tensor::from_vector<double>({1}, {3.0})});
  CHECK(d[0].dtype() == DType::F64);
  CHECK(d[0].data<double>()[0] == 1.5);
  CHECK_THROWS_WITH_AS(unscale(Tensor::scalar<float>(1.0f), {Tensor::from_vector<int64_t>({1}, {3})}),
                       doctest::Contains("gradient 0 has dtype int64"), Error);
}
