// The weight-gradient ops' grad_type = 1 (FLOAT) on the CPU (runtime/grad_type.h, issue #5):
// with F16/BF16 operands, MatMulGrad's dB, GemmGrad's dB/dC and ConvGrad's / ConvTransposeGrad's
// dW/dB are float32 tensors holding the FP32 accumulation itself:
//   - bit for bit the F32 kernel's output on the same (widened) 16-bit operands;
//   - rounded once, bit for bit the default (16-bit) output: the rounding is all that differs;
//   - closer to the exact (float64) sum of the 16-bit operands' products than the 16-bit output;
// the data gradient (output 0) is unchanged. FP32 operands ignore it; any value but 1, and
// float64 operands, are refused naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/grad_type.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

struct GradCase {
  std::string op;
  std::map<std::string, Attribute> attrs;
  std::vector<Shape> shapes;  // dY, X/A, W/B, [C]
  int n_out;
};

const std::vector<GradCase>& cases() {
  static const std::vector<GradCase> all = {
      // a shared weight: one GEMM over the flattened batch, K = 4·32 = 128 products per dB entry
      {"MatMulGrad", {}, {{4, 32, 12}, {4, 32, 40}, {40, 12}}, 2},
      // a broadcast weight batch: dB[j] accumulates two batch entries
      {"MatMulGrad", {}, {{2, 3, 16, 5}, {2, 3, 16, 24}, {3, 24, 5}}, 2},
      {"GemmGrad", {{"transB", attr_i(1)}, {"alpha", attr_f(0.5f)}},
       {{96, 10}, {96, 48}, {10, 48}, {10}}, 3},
      {"ConvGrad", {{"pads", attr_ints({1, 1, 1, 1})}}, {{3, 4, 9, 9}, {3, 3, 9, 9}, {4, 3, 3, 3}}, 3},
      // one input channel: the direct dW path
      {"ConvGrad", {}, {{4, 6, 10, 10}, {4, 1, 14, 14}, {6, 1, 5, 5}}, 3},
      {"ConvTransposeGrad", {{"strides", attr_ints({2, 2})}},
       {{2, 3, 9, 9}, {2, 2, 4, 4}, {2, 3, 3, 3}}, 3},
  };
  return all;
}

std::vector<Tensor> run_grad(const GradCase& c, const std::vector<Tensor>& ins, bool fp32) {
  Graph g;
  g.opsets[kInternalDomain] = 1;
  Node n;
  n.name = "g0";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.domain = kInternalDomain;
  n.opset = 1;
  n.attrs = c.attrs;
  if (fp32) set_weight_grads_fp32(n);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    n.inputs.push_back("in" + std::to_string(i));
    g.inputs.push_back(ValueInfo{n.inputs.back(), ins[i].dtype(), std::nullopt});
    feeds[n.inputs.back()] = ins[i];
  }
  for (int o = 0; o < c.n_out; ++o) {
    n.outputs.push_back("out" + std::to_string(o));
    g.outputs.push_back(ValueInfo{n.outputs.back(), DType::Undefined, std::nullopt});
  }
  g.nodes.push_back(n);
  Executor ex(g);
  return ex.run(feeds);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

double abs_error(const Tensor& t, const Tensor& exact) {
  const auto a = t.to_float_vector();
  const Tensor e = cast_tensor(exact, DType::F64);
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(static_cast<double>(a[i]) - e.data<double>()[i]);
  return s;
}

}  // namespace

TEST_CASE("grad_type FLOAT: dW/dB are the FP32 accumulation of the 16-bit operands, unrounded") {
  for (DType low : {DType::F16, DType::BF16})
    for (size_t ci = 0; ci < cases().size(); ++ci) {
      const GradCase& c = cases()[ci];
      CAPTURE(c.op);
      CAPTURE(ci);
      CAPTURE(dtype_name(low));
      std::mt19937 gen(static_cast<unsigned>(17 + ci));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<Tensor> lo, f32, f64;
      for (const Shape& s : c.shapes) {
        Tensor f(DType::F32, s);
        for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = u(gen);
        lo.push_back(cast_tensor(f, low));
        f32.push_back(cast_tensor(lo.back(), DType::F32));  // exactly the 16-bit values
        f64.push_back(cast_tensor(lo.back(), DType::F64));
      }
      const std::vector<Tensor> rounded = run_grad(c, lo, false);
      const std::vector<Tensor> direct = run_grad(c, lo, true);
      const std::vector<Tensor> ref32 = run_grad(c, f32, false);
      const std::vector<Tensor> exact = run_grad(c, f64, false);
      REQUIRE(direct.size() == static_cast<size_t>(c.n_out));
      // The data gradient is what it was.
      CHECK(same_bits(direct[0], rounded[0]));
      for (int k = 1; k < c.n_out; ++k) {
        CAPTURE(k);
        REQUIRE(rounded[k].dtype() == low);
        REQUIRE(direct[k].dtype() == DType::F32);
        CHECK(same_bits(direct[k], ref32[k]));                     // the FP32 accumulation itself
        CHECK(same_bits(cast_tensor(direct[k], low), rounded[k]));  // only the rounding differs
        const double e_direct = abs_error(direct[k], exact[k]);
        const double e_rounded = abs_error(rounded[k], exact[k]);
        CAPTURE(e_direct);
        CAPTURE(e_rounded);
        // FP32 accumulation error (~1e-7 relative) against one 16-bit rounding (~1e-4 / 1e-3).
        CHECK(e_direct < 0.05 * e_rounded);
      }
    }
}

TEST_CASE("grad_type FLOAT with F32 operands changes nothing") {
  const GradCase& c = cases()[2];  // GemmGrad
  std::vector<Tensor> ins;
  for (const Shape& s : c.shapes) {
    Tensor t(DType::F32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
    ins.push_back(t);
  }
  const auto a = run_grad(c, ins, true), b = run_grad(c, ins, false);
  for (int k = 0; k < c.n_out; ++k) CHECK(same_bits(a[k], b[k]));
}

TEST_CASE("grad_type: values other than 1 and float64 operands are refused naming the node") {
  const GradCase& c = cases()[0];
  std::vector<Tensor> f16, f64;
  for (const Shape& s : c.shapes) {
    f16.push_back(Tensor::zeros(DType::F16, s));
    f64.push_back(Tensor::zeros(DType::F64, s));
  }
  GradCase bad = c;
  bad.attrs["grad_type"] = attr_i(10);
  CHECK_THROWS_WITH(run_grad(bad, f16, false),
                    doctest::Contains("node 'g0' (ai.onnx_amp_train.MatMulGrad"));
  CHECK_THROWS_WITH(run_grad(bad, f16, false), doctest::Contains("grad_type 10 is not supported"));
  CHECK_THROWS_WITH(run_grad(c, f64, true), doctest::Contains("needs float32, float16 or bfloat16"));
  const GradCase& conv = cases()[3];
  std::vector<Tensor> c64;
  for (const Shape& s : conv.shapes) c64.push_back(Tensor::zeros(DType::F64, s));
  CHECK_THROWS_WITH(run_grad(conv, c64, true), doctest::Contains("ConvGrad"));
  // Only the four weight-gradient ops take it.
  Node relu;
  relu.name = "r";
  relu.op_type = "ReluGrad";
  relu.domain = kInternalDomain;
  CHECK_THROWS_WITH(set_weight_grads_fp32(relu), doctest::Contains("not to ReluGrad"));
  CHECK_FALSE(weight_grads_in_fp32(relu));
}
