// The host-side checks of CUDA kernels run before anything touches the device, so they are tested
// here without one: each bad input must fail on CUDA with exactly the CPU kernel's error (same
// node, same message). Covers PadGrad, GatherElements(+Grad), ReduceXYGrad, PReluGrad and
// Gelu(+Grad).
// Built with the CUDA backend only (elsewhere the file says so).
#include <doctest/doctest.h>

#ifdef OAT_HAVE_CUDA
#include <memory>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_f;
using oat_test::attr_i;
using oat_test::attr_s;

namespace {

Node make_node(const std::string& op, int64_t opset, std::map<std::string, Attribute> attrs,
               size_t inputs, int outputs) {
  Node n;
  n.name = "n0";
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = opset;
  n.domain = static_cast<int>(n.op) >= static_cast<int>(OpId::SumToShape) ? kInternalDomain : "";
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (int o = 0; o < outputs; ++o) n.outputs.push_back("out" + std::to_string(o));
  return n;
}

// The error the kernel of `d` throws on these host tensors (creating it included), or "" when it
// throws none. The CUDA kernel gets no CUDA context: a kernel that passes its checks fails on its
// first device call instead.
std::string failure(Device d, const Node& n, const std::vector<Tensor>& inputs, int outputs) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  std::vector<Tensor> outs(static_cast<size_t>(outputs));
  try {
    std::unique_ptr<OpKernel> k = default_registry().create(n, d, inputs.at(0).dtype());
    KernelContext ctx(n, in, &outs, d, nullptr);
    k->compute(ctx);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Both backends reject the input with the same message, which contains `want`.
void same_failure(const std::string& op, int64_t opset, std::map<std::string, Attribute> attrs,
                  const std::vector<Tensor>& inputs, const std::string& want, int outputs = 1) {
  const Node n = make_node(op, opset, std::move(attrs), inputs.size(), outputs);
  const std::string cpu = failure(Device::CPU, n, inputs, outputs);
  const std::string cuda = failure(Device::CUDA, n, inputs, outputs);
  CAPTURE(op);
  CAPTURE(cpu);
  CHECK(!want.empty());
  CHECK(cpu.find(want) != std::string::npos);
  CHECK(cuda == cpu);
}

Tensor f32(Shape s) { return Tensor::zeros(DType::F32, std::move(s)); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); }
Tensor vec(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return i64({n}, std::move(v));
}

}  // namespace

TEST_CASE("PadGrad: bad shapes and pads fail on CUDA with the CPU's errors") {
  same_failure("PadGrad", 1, {}, {f32({5, 5}), vec({3, 4}), vec({1, 1, 1, 1})},
               "gradient shape [5, 5] does not match the padded input [5, 6]");
  same_failure("PadGrad", 1, {}, {f32({5, 6}), vec({3, 4}), vec({1, 1, 1})},
               "need 2 entries per padded axis (2)");
  same_failure("PadGrad", 1, {}, {f32({5, 6}), vec({-3, 4}), vec({1, 1, 1, 1})},
               "has a negative dimension");
  same_failure("PadGrad", 1, {{"mode", attr_s("mirror")}}, {f32({5, 6}), vec({3, 4})},
               "unknown pad mode 'mirror'");
}

TEST_CASE("GatherElements(+Grad): bad indices fail on CUDA with the CPU's errors") {
  same_failure("GatherElements", 13, {{"axis", attr_i(1)}}, {f32({3, 4}), i64({1, 2}, {0, 4})},
               "index 4 is out of range for axis 1 of data [3, 4] (size 4)");
  same_failure("GatherElements", 13, {{"axis", attr_i(-1)}}, {f32({3, 4}), i64({1, 2}, {-5, 0})},
               "index -5 is out of range for axis 1");
  same_failure("GatherElements", 13, {}, {f32({3, 4}), vec({0, 1})},
               "indices [2] must have the rank of data [3, 4]");
  same_failure("GatherElements", 13, {{"axis", attr_i(1)}},
               {f32({3, 4}), i64({4, 1}, {0, 0, 0, 0})},
               "indices [4, 1] exceed data [3, 4] on axis 0");
  same_failure("GatherElementsGrad", 1, {{"axis", attr_i(1)}},
               {f32({2, 3}), vec({3, 4}), i64({2, 2}, {0, 1, 2, 3})},
               "gradient shape [2, 3] does not match the indices [2, 2]");
  same_failure("GatherElementsGrad", 1, {}, {f32({1, 2}), vec({3, 4}), i64({1, 2}, {3, 0})},
               "index 3 is out of range for axis 0 of data [3, 4] (size 3)");
}

TEST_CASE("ReduceXYGrad: bad attributes and shapes fail on CUDA with the CPU's errors") {
  same_failure("ReduceXYGrad", 1, {{"reduce", attr_s("ReduceSum")}},
               {f32({1, 4}), f32({3, 4}), f32({1, 4})}, "unknown reduction 'ReduceSum'");
  same_failure("ReduceXYGrad", 1, {{"reduce", attr_s("ReduceMax")}},
               {f32({1, 4}), f32({3, 4}), f32({1, 4}), vec({2})}, "axis 2 out of range for rank 2");
  same_failure("ReduceXYGrad", 1, {{"reduce", attr_s("ReduceProd")}},
               {f32({3, 1}), f32({3, 4}), f32({3, 1}), vec({0})},
               "gradient [3, 1] and output [3, 1] do not match the reduction of [3, 4]");
}

TEST_CASE("PReluGrad: bad slopes fail on CUDA with the CPU's errors") {
  same_failure("PReluGrad", 1, {}, {f32({4}), f32({4}), f32({3, 4})},
               "slope shape [3, 4] does not broadcast unidirectionally to X shape [4]", 2);
  same_failure("PReluGrad", 1, {}, {f32({4}), f32({4}), f32({5})}, "cannot broadcast", 2);
  same_failure("PReluGrad", 1, {}, {f32({4}), f32({3}), f32({1})},
               "input 1 is float32 [3] but the gradient dY is float32 [4]", 2);
  same_failure("PReluGrad", 1, {}, {f32({4}), f32({4}), Tensor::zeros(DType::F64, {1})},
               "slope has dtype float64, X has float32", 2);
}

TEST_CASE("Gelu(+Grad): an unknown 'approximate' fails on CUDA with the CPU's error") {
  // Before, the CUDA kernels ran the erf form for any value other than "tanh".
  same_failure("Gelu", 20, {{"approximate", attr_s("fast")}}, {f32({4})},
               "approximate must be \"none\" or \"tanh\", got \"fast\"");
  same_failure("GeluGrad", 1, {{"approximate", attr_s("Tanh")}}, {f32({4}), f32({4})},
               "approximate must be \"none\" or \"tanh\", got \"Tanh\"");
}

TEST_CASE("QuantizeLinear, DequantizeLinear, QuantizeLinearGrad: bad parameters fail on CUDA with the CPU's errors") {
  same_failure("QuantizeLinear", 13, {}, {f32({2, 3}), f32({2})},
               "per-axis scale [2] must have X's dimension 1 (3) for X [2, 3]");
  same_failure("QuantizeLinear", 13, {{"axis", attr_i(0)}}, {f32({2, 3}), f32({2}), f32({3})},
               "zero_point [3] must have scale's shape [2]");
  same_failure("QuantizeLinear", 13, {}, {f32({2, 3}), f32({}), i64({}, {0})},
               "y_zero_point has dtype int64: quantized values are uint8 or int8");
  same_failure("DequantizeLinear", 13, {},
               {Tensor::zeros(DType::U8, {4}), f32({}), Tensor::zeros(DType::I8, {})},
               "x_zero_point has dtype int8, expected uint8 (the quantized input's type)");
  same_failure("DequantizeLinear", 13, {{"axis", attr_i(3)}},
               {Tensor::zeros(DType::I8, {2, 3}), f32({3})}, "axis 3 is out of range for rank 2");
  same_failure("QuantizeLinearGrad", 1, {}, {f32({2, 3}), f32({3, 2}), f32({})},
               "dY [2, 3] and X [3, 2] must match");
  same_failure("QuantizeLinearGrad", 1, {}, {f32({2, 3}), f32({2, 3}), i64({}, {1})},
               "scale has dtype int64");
}

#else
TEST_CASE("CUDA host checks") { MESSAGE("SKIPPED: this build has no CUDA backend"); }
#endif
