// ONNX's optimizers of domain ai.onnx.preview.training (Adagrad, Momentum, Adam), which run as
// expansions (runtime/composite/training_ops.cc): against the update rules written out in double
// precision, at T = 0 (what ONNX's conformance cases cover) and T > 0 (learning-rate decay,
// Momentum's β and Adam's bias correction), in F32 and F64, with several tensors per node, an
// output left out, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "close_to.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

const char* kDomain = "ai.onnx.preview.training";

Tensor random(DType t, const Shape& s, unsigned seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor d(DType::F64, s);
  for (int64_t i = 0; i < d.numel(); ++i) d.data<double>()[i] = u(rng);
  return cast_tensor(d, t);
}

std::vector<double> dvec(const Tensor& t) {
  std::vector<double> r;
  for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.item_as_double(i));
  return r;
}

std::vector<Tensor> run(const std::string& op, const std::map<std::string, Attribute>& attrs,
                        const std::vector<Tensor>& inputs, int n_outputs) {
  return run_node(op, 1, attrs, inputs, n_outputs, kDomain);
}

Tensor r_of(double v, DType t = DType::F32) { return cast_tensor(Tensor::scalar<double>(v), t); }

}  // namespace

TEST_CASE("Adagrad: decayed rate, regularization, two tensors, F32 and F64") {
  for (DType t : {DType::F32, DType::F64}) {
    for (int64_t step : {0, 3}) {
      const std::string type = dtype_name(t);
      CAPTURE(type);
      CAPTURE(step);
      const double r = 0.1, decay = 0.25, eps = 1e-5, lambda = 0.01;
      const Tensor x1 = random(t, {3}, 1), x2 = random(t, {2, 2}, 2);
      const Tensor g1 = random(t, {3}, 3), g2 = random(t, {2, 2}, 4);
      const Tensor h1 = random(t, {3}, 5, 0, 1), h2 = random(t, {2, 2}, 6, 0, 1);
      auto out = run("Adagrad",
                     {{"decay_factor", attr_f(decay)},
                      {"epsilon", attr_f(eps)},
                      {"norm_coefficient", attr_f(lambda)}},
                     {r_of(r, t), Tensor::scalar<int64_t>(step), x1, x2, g1, g2, h1, h2}, 4);
      REQUIRE(out.size() == 4);
      const double tol = t == DType::F64 ? 1e-12 : 2e-6;
      const double rr = (t == DType::F64 ? r : static_cast<float>(r)) /
                        (1 + step * static_cast<double>(static_cast<float>(decay)));
      for (int k = 0; k < 2; ++k) {
        const auto x = dvec(k ? x2 : x1), g = dvec(k ? g2 : g1), h = dvec(k ? h2 : h1);
        std::vector<double> xw, hw;
        for (size_t i = 0; i < x.size(); ++i) {
          const double gr = static_cast<float>(lambda) * x[i] + g[i];
          const double hn = h[i] + gr * gr;
          hw.push_back(hn);
          xw.push_back(x[i] - rr * gr / (std::sqrt(hn) + static_cast<float>(eps)));
        }
        CHECK(out[k].dtype() == t);
        CHECK(out[k].shape() == (k ? x2 : x1).shape());
        oat_test::check_close_to(out[k], xw, tol);
        oat_test::check_close_to(out[2 + k], hw, tol);
      }
    }
  }
}

TEST_CASE("Momentum: standard and Nesterov; beta applies from T > 0") {
  for (const char* mode : {"standard", "nesterov"}) {
    for (int64_t step : {0, 2}) {
      CAPTURE(mode);
      CAPTURE(step);
      const double r = 0.05, alpha = 0.9, beta = 0.5, lambda = 0.001;
      const Tensor x = random(DType::F64, {5}, 7), g = random(DType::F64, {5}, 8),
                   v = random(DType::F64, {5}, 9);
      // R in float32 with float64 tensors: R is cast to X's type.
      auto out = run("Momentum",
                     {{"alpha", attr_f(alpha)},
                      {"beta", attr_f(beta)},
                      {"mode", attr_s(mode)},
                      {"norm_coefficient", attr_f(lambda)}},
                     {r_of(r), Tensor::scalar<int64_t>(step), x, g, v}, 2);
      const double a = static_cast<float>(alpha), rf = static_cast<float>(r);
      const double b = step > 0 ? static_cast<double>(static_cast<float>(beta)) : 1.0;
      std::vector<double> xw, vw;
      for (int64_t i = 0; i < 5; ++i) {
        const double gr = static_cast<float>(lambda) * x.item_as_double(i) + g.item_as_double(i);
        const double vn = a * v.item_as_double(i) + b * gr;
        vw.push_back(vn);
        const double d = std::string(mode) == "nesterov" ? gr + a * vn : vn;
        xw.push_back(x.item_as_double(i) - rf * d);
      }
      oat_test::check_close_to(out[0], xw, 1e-12);
      oat_test::check_close_to(out[1], vw, 1e-12);
    }
  }
}

TEST_CASE("Adam: bias correction from T > 0, post-update decay, an output left out") {
  for (int64_t step : {0, 1, 5}) {
    CAPTURE(step);
    const double r = 0.01, alpha = 0.8, beta = 0.95, eps = 1e-4, lambda = 0.02, post = 0.1;
    const Tensor x = random(DType::F32, {2, 3}, 10), g = random(DType::F32, {2, 3}, 11);
    const Tensor v = random(DType::F32, {2, 3}, 12), h = random(DType::F32, {2, 3}, 13, 0, 1);
    const std::map<std::string, Attribute> attrs = {{"alpha", attr_f(alpha)},
                                                    {"beta", attr_f(beta)},
                                                    {"epsilon", attr_f(eps)},
                                                    {"norm_coefficient", attr_f(lambda)},
                                                    {"norm_coefficient_post", attr_f(post)}};
    auto out = run("Adam", attrs, {r_of(r), Tensor::scalar<int64_t>(step), x, g, v, h}, 3);
    const double a = static_cast<float>(alpha), b = static_cast<float>(beta);
    const double rr = step > 0 ? r * std::sqrt(1 - std::pow(b, step)) / (1 - std::pow(a, step)) : r;
    std::vector<double> xw, vw, hw;
    for (int64_t i = 0; i < 6; ++i) {
      const double gr = static_cast<float>(lambda) * x.item_as_double(i) + g.item_as_double(i);
      const double vn = a * v.item_as_double(i) + (1 - a) * gr;
      const double hn = b * h.item_as_double(i) + (1 - b) * gr * gr;
      vw.push_back(vn);
      hw.push_back(hn);
      const double xn = x.item_as_double(i) - rr * vn / (std::sqrt(hn) + static_cast<float>(eps));
      xw.push_back((1 - static_cast<float>(post)) * xn);
    }
    oat_test::check_close_to(out[0], xw, 3e-6);
    oat_test::check_close_to(out[1], vw, 3e-6);
    oat_test::check_close_to(out[2], hw, 3e-6);

    // V' left out (an empty output name): X' and H' are the same.
    Graph gr;
    gr.opsets[kDomain] = 1;
    Node n;
    n.name = "adam";
    n.op_type = "Adam";
    n.domain = kDomain;
    n.opset = 1;
    n.attrs = attrs;
    n.inputs = {"R", "T", "X", "G", "V", "H"};
    n.outputs = {"X_new", "", "H_new"};
    const std::vector<Tensor> feeds_v = {r_of(r), Tensor::scalar<int64_t>(step), x, g, v, h};
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      std::vector<Dim> dims;
      for (int64_t d : feeds_v[i].shape()) dims.push_back(Dim{d, ""});
      gr.inputs.push_back(ValueInfo{n.inputs[i], feeds_v[i].dtype(), dims});
      feeds[n.inputs[i]] = feeds_v[i];
    }
    gr.outputs = {ValueInfo{"X_new", DType::Undefined, std::nullopt},
                  ValueInfo{"H_new", DType::Undefined, std::nullopt}};
    gr.nodes.push_back(n);
    Executor ex(gr);
    auto two = ex.run(feeds);
    REQUIRE(two.size() == 2);
    oat_test::check_close_to(two[0], xw, 3e-6);
    oat_test::check_close_to(two[1], hw, 3e-6);
  }
}

TEST_CASE("preview training ops: bad nodes are named errors") {
  const Tensor x = random(DType::F32, {2}, 1);
  const Tensor r = r_of(0.1), t = Tensor::scalar<int64_t>(0);
  auto fails_with = [](auto&& f, const std::string& what) {
    try {
      f();
      FAIL("no error; expected: ", what);
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      CHECK_MESSAGE(msg.find(what) != std::string::npos, msg);
      CHECK_MESSAGE(msg.find("'n0'") != std::string::npos, msg);
    }
  };
  // Adagrad needs 3 groups: 2 + 4 inputs is not a multiple.
  fails_with([&] { run("Adagrad", {}, {r, t, x, x, x, x}, 2); }, "3 groups");
  fails_with(
      [&] {
        run("Momentum",
            {{"alpha", attr_f(0.9f)},
             {"beta", attr_f(1)},
             {"norm_coefficient", attr_f(0)},
             {"mode", attr_s("heavy")}},
            {r, t, x, x, x}, 2);
      },
      "mode 'heavy'");
  fails_with(
      [&] {
        run("Momentum",
            {{"alpha", attr_f(0.9f)},
             {"mode", attr_s("standard")},
             {"norm_coefficient", attr_f(0)}},
            {r, t, x, x, x}, 2);
      },
      "'beta' is required");
  fails_with([&] { run("Adam", {}, {r, t, x, x, cast_tensor(x, DType::F64), x}, 3); }, "one type");
  fails_with(
      [&] {
        run("Adam", {},
            {r, t, cast_tensor(x, DType::F16), cast_tensor(x, DType::F16),
             cast_tensor(x, DType::F16), cast_tensor(x, DType::F16)},
            3);
      },
      "expected float or double");
}
