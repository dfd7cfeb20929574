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
#include "tests/cuda/agreement_case.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_f;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_s;

namespace {

using namespace oat_agree;

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
  g.opsets[c.domain] = c.opset;
  Node n;
  n.name = "n0";
  n.op_type = c.op;
  n.op = c.domain.empty() ? op_from_name(c.op) : OpId::Unknown;
  n.opset = c.opset;
  const bool internal = n.op != OpId::Unknown &&
                        static_cast<int>(n.op) >= static_cast<int>(OpId::SumToShape);
  n.domain = internal ? kInternalDomain : c.domain;
  if (n.op == OpId::Unknown && !is_composite(n)) throw Error("unknown op " + c.op);
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
    add_elementwise_cases(v);
    add_reduce_shape_cases(v);
    add_nn_cases(v);
    add_gradient_cases(v);
    add_model_op_cases(v);
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

// Case c (index ci in cases()) in dtype dt: the CPU reference, and where a device answers the
// CUDA executor compared with it. Returns 0 when the CPU has no kernel in dt, 1 when only the
// CPU ran, 2 when both ran and were compared.
int agree(const Case& c, size_t ci, DType dt, bool gpu) {
  const std::string name = case_name(c, dt);
  CAPTURE(name);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    inputs.push_back(make_input(c.inputs[i], dt, 1000 * ci + i + 1));
  if (!cpu_runs(c, inputs)) {
    MESSAGE(name << ": the CPU has no kernel in this dtype; not compared");
    return 0;
  }
  const Graph g = single_node_graph(c, inputs);
  std::vector<Tensor> ref;
  REQUIRE_NOTHROW(ref = run_on(Device::CPU, g, inputs));
  REQUIRE(static_cast<int>(ref.size()) == c.outputs);
  if (!gpu) return 1;
  std::vector<Tensor> got;
  REQUIRE_NOTHROW(got = run_on(Device::CUDA, g, inputs));
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
  return 2;
}

}  // namespace

TEST_CASE("every backend agrees with the CPU reference") {
  const bool gpu = cuda::device_count() > 0;
  if (!gpu)
    MESSAGE("SKIPPED the CUDA half: " << cuda::describe_device()
                                      << " (the CPU reference of every case still runs)");
  int ran = 0, compared = 0;
  for (size_t ci = 0; ci < cases().size(); ++ci)
    for (DType dt : cases()[ci].dtypes) {
      const int r = agree(cases()[ci], ci, dt, gpu);
      ran += r > 0;
      compared += r == 2;
    }
  CHECK(ran > 100);
  if (gpu) CHECK(compared == ran);
  std::cout << "backends agree: " << ran << " CPU reference runs, " << compared
            << " compared with CUDA\n";
}

// cuDNN's legacy pooling does not list BF16; the pool kernels take a BF16 refusal as "run the
// own kernels" (runtime/cuda/kernels/pool_window.h). On the emulator, OAT_EMU_CUDNN_NO_BF16_POOL
// makes its cuDNN refuse BF16 pooling, so every BF16 pool and pool-gradient case of the table
// takes that path (without the fallback, CUDNN_CHECK throws and the case fails); on a GPU the
// real cuDNN decides, and either path must agree with the CPU.
TEST_CASE("BF16 pools and their gradients agree where cuDNN refuses BF16 pooling") {
  const bool gpu = cuda::device_count() > 0;
  if (!gpu) {
    MESSAGE("SKIPPED: " << cuda::describe_device());
    return;
  }
  struct EnvGuard {
    EnvGuard() { setenv("OAT_EMU_CUDNN_NO_BF16_POOL", "1", 1); }
    ~EnvGuard() { unsetenv("OAT_EMU_CUDNN_NO_BF16_POOL"); }
  } guard;
  const std::set<std::string> pools = {"MaxPool",          "AveragePool",     "GlobalMaxPool",
                                       "GlobalAveragePool", "MaxPoolGrad",     "AveragePoolGrad",
                                       "GlobalMaxPoolGrad", "GlobalAveragePoolGrad"};
  int compared = 0;
  std::set<std::string> ops;
  for (size_t ci = 0; ci < cases().size(); ++ci) {
    const Case& c = cases()[ci];
    if (!pools.count(c.op)) continue;
    // The table's F32-only pool cases (GlobalMaxPoolGrad's) run here in BF16 too.
    if (agree(c, ci, DType::BF16, gpu) == 2) {
      ++compared;
      ops.insert(c.op);
    }
  }
  CAPTURE(compared);
  CHECK(ops.size() == pools.size());
  CHECK(compared >= 20);
}

// Issue #5: "the every-backend-agrees list covers every op in every dtype". Every op of the
// registry (ops.def) has a CUDA kernel and at least one case above in each of F32, F16 and BF16,
// except the ops that do no floating arithmetic (one case in any dtype) and the exemptions
// below, each with its reason.
TEST_CASE("the agreement table covers every op in F32, F16 and BF16") {
  const std::set<OpId> not_floating = {
      OpId::Not,  OpId::And,           OpId::Or,          OpId::Xor,      OpId::Shape,
      OpId::Size, OpId::MatMulInteger, OpId::ConvInteger, OpId::BitShift, OpId::TfIdfVectorizer};
  // Generators run on the host in every executor (their outputs are shapes and constants,
  // uploaded where a device node reads them): no CUDA kernel, no case.
  const std::set<OpId> host_only = {OpId::Constant, OpId::ConstantOfShape, OpId::Range,
                                     // signal generators (opset 17), host-placed by CudaContext
                                     OpId::HannWindow, OpId::HammingWindow, OpId::BlackmanWindow,
                                     OpId::MelWeightMatrix};
  // Control flow has CPU kernels only (runtime/cpu/kernels/control_flow.cc): a CUDA executor
  // runs If, Loop and Scan on the host, their subgraphs through CPU executors. So it does the
  // sequence and optional ops (their values live on the host: runtime/tensor.h). Checked
  // against the CPU in host_placed_cuda_test.cc.
  const std::set<OpId> cpu_only = {OpId::If,
                                   OpId::Loop,
                                   OpId::Scan,
                                   OpId::SequenceEmpty,
                                   OpId::SequenceConstruct,
                                   OpId::SequenceInsert,
                                   OpId::SequenceAt,
                                   OpId::SequenceErase,
                                   OpId::SequenceLength,
                                   OpId::SplitToSequence,
                                   OpId::ConcatFromSequence,
                                   OpId::SequenceMap,
                                   OpId::Optional,
                                   OpId::OptionalHasElement,
                                   OpId::OptionalGetElement};
  // The CPU Executor's fused inference kernels stand in for an expansion only on the CPU
  // (LoweringOptions::cpu_inference); a device executor runs the expansion, whose ops have cases.
  const std::set<OpId> cpu_fused = {OpId::LSTMSequence, OpId::GRUSequence};
  // Placed on the host by CudaContext (their output's length depends on the values): no CUDA
  // kernel; their cases run the CUDA executor's download path (runtime/cuda/README.md).
  // Bernoulli and Multinomial are host-placed too (one generator per node, the CPU's stream on
  // every backend; a step with one is not captured in a CUDA graph): their seeded cases agree.
  // RandomNormal/RandomUniform(+Like) have a device kernel for unseeded nodes (Philox, both
  // backends) and run on the host when seeded: cases of both kinds.
  // TfIdfVectorizer too (an integer node without a device kernel).
  const std::set<OpId> host_placed = {
      OpId::NonMaxSuppression, OpId::Compress,  OpId::Unique,      OpId::Det,
      OpId::NonZero,           OpId::Bernoulli, OpId::Multinomial, OpId::TfIdfVectorizer};
  // String in, string out (no device element type: runtime/tensor.h): placed on the host, and
  // checked against the CPU executor in host_placed_cuda_test.cc ("string nodes run on the
  // host"), which the agreement cases' float/int inputs cannot express.
  const std::set<OpId> string_ops = {OpId::StringNormalizer};
  // FP32 by design: the optimizer ops update FP32 masters from FP32 (unscaled) gradients; the
  // F16/BF16 gradients are widened by UnscaleAndCheck, whose cases cover F16/BF16.
  const std::set<OpId> fp32_only = {OpId::SGDUpdate, OpId::AdamUpdate, OpId::MultiSGDUpdate,
                                    OpId::MultiAdamUpdate, OpId::GlobalNormClip};
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
    if (string_ops.count(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but strings live on the host)");
      continue;
    }
    // ai.onnx.ml (classical ML: trees, linear models, encoders) has CPU kernels only; a CUDA
    // executor runs those nodes on the host (host_placed_cuda_test.cc, "ai.onnx.ml nodes").
    if (is_ml_op(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but ai.onnx.ml runs on the host)");
      continue;
    }
    if (cpu_fused.count(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but only the CPU lowering uses it)");
      continue;
    }
    if (cpu_only.count(op)) {
      if (default_registry().supports_op(op, Device::CUDA))
        no_kernel += cat(" ", op_name(op), "(registered on cuda, but it runs on the host)");
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
