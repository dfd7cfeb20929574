// ONNX's Gradient op (ai.onnx.preview.training; train/autodiff/gradient_op.h) through the
// Executor: ∂(Σ y)/∂x at the node's own input values for a non-scalar y, an x that y does not
// read (zeros), an output left out, the CLI's `infer` on ONNX's own test model, and the errors.
#include "train/autodiff/gradient_op.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "close_to.h"
#include "gradient_op_model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"

using namespace oat;

namespace {

std::string error_of(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  try {
    Executor ex(g);
    ex.run(feeds);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Gradient: d(sum y)/dx at the node's inputs, zeros where y does not read x") {
  train::register_gradient_op();
  oat_test::GradientOpModel m;
  Executor ex(m.g);
  auto out = ex.run({{"a", m.a}, {"a2", m.a2}, {"q", m.q}});
  REQUIRE(out.size() == 4);
  std::vector<double> da, dw;
  m.expected(da, dw);
  CHECK(out[1].shape() == m.a.shape());
  CHECK(out[2].shape() == m.w.shape());
  oat_test::check_close_to(out[1], da, 1e-5);
  oat_test::check_close_to(out[2], dw, 1e-5);
  CHECK(out[3].shape() == m.q.shape());
  CHECK(out[3].dtype() == DType::F32);
  for (float v : out[3].to_float_vector()) CHECK(v == 0.0f);
  // y itself is the graph's own, at a (not a2): the Gradient recomputed its forward apart.
  const Tensor y = out[0];
  double h00 = 0;
  for (int k = 0; k < 3; ++k) h00 += double(m.a.data<float>()[k]) * m.w.data<float>()[k * 4];
  CHECK(y.item_as_double(0) == doctest::Approx(std::tanh(h00) * std::tanh(h00)).epsilon(1e-6));
}

TEST_CASE("Gradient: bad nodes are named errors") {
  train::register_gradient_op();
  const std::map<std::string, Tensor> feeds = [] {
    oat_test::GradientOpModel m;
    return std::map<std::string, Tensor>{{"a", m.a}, {"a2", m.a2}, {"q", m.q}};
  }();
  auto with = [](auto edit) {
    oat_test::GradientOpModel m;
    m.g.nodes.pop_back();  // grad_q
    m.g.outputs.pop_back();
    edit(m.g.nodes.back());
    return m.g;
  };
  // y reads the graph input a, which the node does not list.
  std::string e = error_of(with([](Node& n) {
                             n.inputs = {"W"};
                             n.outputs = {"dW"};
                             n.attrs["xs"].strings = {"W"};
                           }),
                           feeds);
  CHECK_MESSAGE(e.find("'grad'") != std::string::npos, e);
  CHECK_MESSAGE(
      e.find("depends on 'a', which is not in xs or zs (a graph input") != std::string::npos, e);
  // One input per name of xs and zs.
  e = error_of(with([](Node& n) { n.inputs = {"a2"}; }), feeds);
  CHECK_MESSAGE(e.find("has 1 inputs; xs and zs name 2 values") != std::string::npos, e);
  // y must be computed before the node.
  e = error_of(with([](Node& n) { n.attrs["y"].s = "later"; }), feeds);
  CHECK_MESSAGE(e.find("y 'later' is not in xs or zs, and no node before this one computes it") !=
                    std::string::npos,
                e);
  e = error_of(with([](Node& n) { n.attrs["xs"].strings = {"a", "a"}; }), feeds);
  CHECK_MESSAGE(e.find("'a' appears twice in xs and zs") != std::string::npos, e);
}

TEST_CASE("Gradient: the CLI runs ONNX's test_gradient_of_add_and_mul") {
  namespace fs = std::filesystem;
  const fs::path c = "/usr/share/libonnx-testdata/data/simple/test_gradient_of_add_and_mul";
  REQUIRE_MESSAGE(fs::is_directory(c), "libonnx-testdata is not installed");
  const fs::path out = fs::temp_directory_path() / "oat_gradient_op_cli";
  fs::remove_all(out);
  const std::string cmd = std::string(OAT_CLI_PATH) + " infer " + (c / "model.onnx").string() +
                          " --input a=" + (c / "test_data_set_0/input_0.pb").string() +
                          " --input b=" + (c / "test_data_set_0/input_1.pb").string() + " -o " +
                          out.string() + " > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  // d = (a + b)·a at a = 1, b = 2: d = 3, dd/da = 2a + b = 4, dd/db = a = 1.
  std::vector<float> got;
  for (int k = 0; k < 3; ++k) {
    const fs::path f = out / cat("output_", k, ".pb");
    REQUIRE_MESSAGE(fs::exists(f), f.string());
    got.push_back(onnx_loader::read_tensor_pb(f.string()).tensor.to_float_vector().at(0));
  }
  CHECK(got == std::vector<float>{3.0f, 4.0f, 1.0f});
  fs::remove_all(out);
}
