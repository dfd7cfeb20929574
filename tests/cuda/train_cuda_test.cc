// Training on CUDA (TrainerConfig::device, `train/eval --device cuda`). Where no device answers
// (this machine, CI) the requests fail with "no CUDA device" and write nothing, and the
// agreement cases say SKIPPED. Where one answers: the CUDA trainer follows the CPU reference
// step by step (FP32), the captured CUDA graph gives bit-identical results to eager CUDA steps,
// a partial last batch runs eagerly between replays, a model with extra inputs (a mask, token
// types: Dataset::extra) follows the CPU with them copied into the graph's buffers, and FP16 with a dynamic loss scale skips the
// same overflowing steps with the same scale as the CPU's emulation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include "cli/cli_runner.h"
#include "dense_models.h"
#include "models/zoo.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/cuda/device.h"
#include "train/trainer.h"
#ifdef OAT_CUDA_EMULATED
#include "runtime/cuda/emulator/launch.h"  // cudnn_find_calls
#endif

using namespace oat;
using namespace oat_test;

namespace {

bool have_gpu() {
  if (cuda::device_count() > 0) return true;
  static bool said = false;
  if (!said) {
    std::cout << "train_cuda_test: SKIPPED the CUDA training cases (" << cuda::describe_device(0)
              << ")\n";
    said = true;
  }
  return false;
}

train::Dataset random_images(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  train::Dataset d;
  d.inputs = Tensor(DType::F32, {n, 1, 28, 28});
  d.targets = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < d.inputs.numel(); ++i) d.inputs.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < n; ++i) d.targets.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  return d;
}

struct RunResult {
  std::vector<double> losses;
  std::map<std::string, Tensor> state;
  int64_t optimizer_step = 0, skipped = 0;
  double scale = 0;
  std::string graph;
};

enum class WithDropout { No, Seeded, Unseeded, Noise, SeededNoise, Loop };

// models::mlp(1) with Gaussian noise after its first Relu: h + 0.1·RandomNormalLike(h), the
// generator unseeded (Philox, a device kernel on CUDA) or seeded (drawn on the host).
Graph mlp_with_noise(bool seeded) {
  Graph g = models::mlp(1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op != OpId::Relu) continue;
    const std::string h = g.nodes[i].outputs[0], pre = h + ".pre_noise";
    g.nodes[i].outputs[0] = pre;
    std::map<std::string, Attribute> attrs;
    if (seeded) attrs["seed"] = oat_test::attr_f(3);
    g.initializers["noise_scale"] = Tensor::scalar<float>(0.1f);
    const std::vector<Node> noise = {
        oat_test::make_node("noise", "RandomNormalLike", {pre}, "eps", attrs, 1),
        oat_test::make_node("scale_noise", "Mul", {"eps", "noise_scale"}, "scaled_eps"),
        oat_test::make_node("add_noise", "Add", {pre, "scaled_eps"}, h)};
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, noise.begin(),
                   noise.end());
    return g;
  }
  throw Error("mlp has no Relu");
}

// models::mlp(1) with Dropout (ratio 0.5; seed 5, or none) after its first Relu.
Graph mlp_with_dropout(bool seeded) {
  Graph g = models::mlp(1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op != OpId::Relu) continue;
    Node d;
    d.name = "drop";
    d.op_type = "Dropout";
    d.op = OpId::Dropout;
    d.opset = 13;
    if (seeded) {
      d.attrs["seed"].kind = Attribute::Kind::Int;
      d.attrs["seed"].i = 5;
    }
    d.outputs = {g.nodes[i].outputs[0]};
    g.nodes[i].outputs[0] += ".pre_dropout";
    d.inputs = {g.nodes[i].outputs[0]};
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, d);
    return g;
  }
  throw Error("mlp has no Relu");
}

// models::mlp(1) whose input is first halved twice by a Loop (no parameter in its body: the Loop
// is off the gradient path; on CUDA it runs on the host, so a step with it is not captured).
Graph mlp_with_loop() {
  Graph g = models::mlp(1);
  const std::string x = g.inputs.at(0).name;
  for (Node& n : g.nodes)
    for (std::string& in : n.inputs)
      if (in == x) in = "x_halved";
  auto body = std::make_shared<Graph>();
  body->name = "halve_body";
  body->opsets[""] = 13;
  ValueInfo i{"i", DType::I64, std::vector<Dim>{}}, c{"c", DType::Bool, std::vector<Dim>{}},
      h{"h", DType::F32, std::nullopt};
  body->inputs = {i, c, h};
  body->initializers["half"] = Tensor::scalar<float>(0.5f);
  body->nodes = {oat_test::make_node("keep", "Identity", {"c"}, "c_out"),
                 oat_test::make_node("halve", "Mul", {"h", "half"}, "h_out")};
  body->outputs = {ValueInfo{"c_out", DType::Bool, std::vector<Dim>{}},
                   ValueInfo{"h_out", DType::F32, std::nullopt}};
  g.initializers["two"] = Tensor::scalar<int64_t>(2);
  g.nodes.insert(g.nodes.begin(),
                 oat_test::make_node_outputs("loop", "Loop", {"two", "", x}, {"x_halved"},
                                             {{"body", oat_test::graph_attr(body)}}));
  return g;
}

RunResult train_mlp(Device device, bool graph, const std::string& precision, int64_t samples,
                    double init_scale = 65536.0, WithDropout dropout = WithDropout::No) {
  const Graph model = dropout == WithDropout::No      ? models::mlp(1)
                      : dropout == WithDropout::Loop  ? mlp_with_loop()
                      : dropout == WithDropout::Noise ? mlp_with_noise(false)
                      : dropout == WithDropout::SeededNoise
                          ? mlp_with_noise(true)
                          : mlp_with_dropout(dropout == WithDropout::Seeded);
  train::TrainerConfig cfg;
  cfg.epochs = 2;
  cfg.batch = 32;
  cfg.progress = false;
  cfg.shuffle = true;
  cfg.device = device;
  cfg.cuda_graph = graph;
  cfg.graph.optimizer.kind = train::OptimizerKind::Adam;
  if (precision != "fp32") {
    cfg.graph.precision = precision == "fp16" ? DType::F16 : DType::BF16;
    cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
    cfg.loss_scale.init_scale = init_scale;
    cfg.loss_scale.growth_interval = 3;
  }
  train::Trainer t(model, cfg);
  RunResult r;
  t.on_step = [&](int64_t, double loss) { r.losses.push_back(loss); };
  t.fit(random_images(samples, 7), nullptr);
  r.state = t.state();
  r.optimizer_step = t.optimizer_step();
  r.skipped = t.loss_scaler().state().skipped_steps;
  r.scale = t.loss_scaler().scale();
  r.graph = t.cuda_graph_status();
  return r;
}

// max |a − b| / max(1, max |b|) over every state tensor.
double state_error(const RunResult& a, const RunResult& b) {
  double worst = 0;
  for (const auto& [name, t] : b.state) {
    const std::vector<float> x = cast_tensor(a.state.at(name), DType::F32).to_float_vector();
    const std::vector<float> y = cast_tensor(t, DType::F32).to_float_vector();
    double mx = 1, d = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      mx = std::max(mx, static_cast<double>(std::abs(y[i])));
      d = std::max(d, static_cast<double>(std::abs(x[i] - y[i])));
    }
    worst = std::max(worst, d / mx);
  }
  return worst;
}

// Eight steps each: CUDA eager follows the CPU within 1e-4 (losses and final state); the CUDA
// graph replays the same kernels, so it equals eager exactly (bitwise: no kernel depends on the
// order threads arrive in; GatherGrad, an embedding's gradient, sums its sorted runs without
// atomics, unlike PyTorch's index_add_).
void expect_eager_and_graph_follow(const RunResult& cpu, const RunResult& eager,
                                   const RunResult& graph) {
  REQUIRE(eager.losses.size() == 8);
  REQUIRE(graph.losses.size() == 8);
  for (size_t i = 0; i < cpu.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(eager.losses[i] == doctest::Approx(cpu.losses[i]).epsilon(1e-4));
    CHECK(graph.losses[i] == eager.losses[i]);  // the same kernels, replayed
  }
  CHECK(state_error(eager, cpu) < 1e-4);
  CHECK(state_error(graph, eager) == 0.0);
}


// A model with three inputs (as a BERT-like export has):
//   x float [N, 8], mask int64 [N, 8], types int64 [N] (ids into T [2, 8])
//   h = x * Cast<float>(mask) + Gather(T, types);  logits = h W + b  ([N, 3])
// trained from a Dataset whose extra inputs hold mask and types; label = argmax of the first
// three unmasked x values' sum pattern (any deterministic function learns).
Graph three_input_net() {
  using namespace dense_test;
  std::mt19937 rng(11);
  Graph g;
  g.name = "three_inputs";
  g.opsets[""] = 17;
  g.inputs.push_back(value("x", DType::F32, {-1, 8}));
  g.inputs.push_back(value("mask", DType::I64, {-1, 8}));
  g.inputs.push_back(value("types", DType::I64, {-1}));
  g.initializers["T"] = uniform({2, 8}, 0.5f, rng);
  g.initializers["W"] = uniform({8, 3}, 0.5f, rng);
  g.initializers["b"] = Tensor::zeros(DType::F32, {3});
  Attribute to;
  to.kind = Attribute::Kind::Int;
  to.i = 1;  // float
  g.nodes.push_back(make_node("cast", "Cast", {"mask"}, "maskf", {{"to", to}}));
  g.nodes.push_back(make_node("mul", "Mul", {"x", "maskf"}, "xm"));
  g.nodes.push_back(make_node("emb", "Gather", {"T", "types"}, "te"));
  g.nodes.push_back(make_node("add", "Add", {"xm", "te"}, "h"));
  g.nodes.push_back(make_node("mm", "MatMul", {"h", "W"}, "hw"));
  g.nodes.push_back(make_node("bias", "Add", {"hw", "b"}, "logits"));
  g.outputs.push_back(value("logits", DType::F32, {-1, 3}));
  return g;
}

train::Dataset three_input_data(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  train::Dataset d;
  d.inputs = Tensor(DType::F32, {n, 8});
  d.targets = Tensor(DType::I64, {n});
  Tensor mask(DType::I64, {n, 8}), types(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 3 + static_cast<int64_t>(rng() % 6);  // 3..8 unmasked
    types.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2);
    float s = 0;
    for (int64_t j = 0; j < 8; ++j) {
      const float v = u(rng);
      d.inputs.data<float>()[i * 8 + j] = v;
      mask.data<int64_t>()[i * 8 + j] = j < len;
      if (j < len) s += v;
    }
    d.targets.data<int64_t>()[i] = s < -0.5f ? 0 : s > 0.5f ? 2 : 1;
  }
  d.extra["mask"] = mask;
  d.extra["types"] = types;
  return d;
}

RunResult train_three_inputs(Device device, bool graph, double* val_loss = nullptr) {
  train::TrainerConfig cfg;
  cfg.epochs = 2;
  cfg.batch = 32;
  cfg.progress = false;
  cfg.device = device;
  cfg.cuda_graph = graph;
  cfg.lr = 1e-2;
  cfg.graph.optimizer.kind = train::OptimizerKind::Adam;
  train::Trainer t(three_input_net(), cfg);
  RunResult r;
  t.on_step = [&](int64_t, double loss) { r.losses.push_back(loss); };
  const train::Dataset val = three_input_data(40, 9);
  t.fit(three_input_data(100, 5), &val);
  r.state = t.state();
  r.graph = t.cuda_graph_status();
  if (val_loss) *val_loss = t.evaluate(val).loss;
  return r;
}

}  // namespace

TEST_CASE("Trainer with extra inputs (mask, token types): CPU runs; CUDA eager and graph follow it") {
  // 100 samples, batch 32: three full batches (graph replays, the extra inputs copied into their
  // captured buffers) and one of 4 (eager) per epoch.
  double cpu_val = 0;
  const RunResult cpu = train_three_inputs(Device::CPU, false, &cpu_val);
  REQUIRE(cpu.losses.size() == 8);
  CHECK(std::isfinite(cpu_val));
  for (double l : cpu.losses) CHECK(std::isfinite(l));
  // The extra inputs reach the model: another mask gives another validation loss.
  {
    const Graph g = three_input_net();
    train::Dataset val = three_input_data(40, 9);
    const train::BatchLayout L = train::layout_for(g, train::LossKind::CrossEntropy);
    REQUIRE(L.extra_inputs.size() == 2);
    CHECK(L.extra_inputs[1].bound == 2);  // types index T's 2 rows
    const double a = train::evaluate_model(g, {}, val, L, train::LossKind::CrossEntropy, 16).loss;
    for (int64_t i = 0; i < val.extra["mask"].numel(); ++i) val.extra["mask"].data<int64_t>()[i] = 1;
    const double b = train::evaluate_model(g, {}, val, L, train::LossKind::CrossEntropy, 16).loss;
    CHECK(a != b);
  }
  // Without the extra inputs the Dataset is refused, naming the input and the flag.
  {
    train::TrainerConfig cfg;
    cfg.progress = false;
    train::Trainer t(three_input_net(), cfg);
    train::Dataset d = three_input_data(10, 1);
    d.extra.erase("types");
    CHECK_THROWS_WITH_AS(t.fit(d, nullptr),
                         doctest::Contains("input 'types' (int64 [N]) is not fed: give it with "
                                           "--train-input types=FILE.npy"),
                         Error);
  }
  if (!have_gpu()) return;
  double eager_val = 0;
  const RunResult eager = train_three_inputs(Device::CUDA, false, &eager_val);
  const RunResult graph = train_three_inputs(Device::CUDA, true);
  CHECK(graph.graph == "on");
  expect_eager_and_graph_follow(cpu, eager, graph);  // GatherGrad included: deterministic
  CHECK(eager_val == doctest::Approx(cpu_val).epsilon(1e-4));
}

TEST_CASE("Trainer on CUDA without a device fails with 'no CUDA device'") {
  if (cuda::device_count() > 0) return;  // the cases below cover a device
  train::TrainerConfig cfg;
  cfg.device = Device::CUDA;
  cfg.progress = false;
  CHECK_THROWS_WITH_AS(train::Trainer(models::mlp(1), cfg), doctest::Contains("no CUDA device"),
                       Error);
}

TEST_CASE("Trainer on CUDA: FP32 steps follow the CPU reference; the CUDA graph equals eager") {
  if (!have_gpu()) return;
  // 100 samples, batch 32: three full batches (graph replays) and one of 4 (eager) per epoch.
  const RunResult cpu = train_mlp(Device::CPU, false, "fp32", 100);
  const RunResult eager = train_mlp(Device::CUDA, false, "fp32", 100);
  const RunResult graph = train_mlp(Device::CUDA, true, "fp32", 100);
  CHECK(eager.graph == "off (--no-cuda-graph)");
  CHECK(graph.graph == "on");
  REQUIRE(cpu.losses.size() == 8);
  expect_eager_and_graph_follow(cpu, eager, graph);
  CHECK(graph.optimizer_step == 8);
}

TEST_CASE("Trainer on CUDA with --cudnn-benchmark: LeNet-5's convolution algorithms are timed; "
          "steps follow the CPU, the CUDA graph equals eager") {
  if (!have_gpu()) return;
  struct Benchmark {  // process-wide: restored for the other cases
    Benchmark() { cuda::set_cudnn_benchmark(true); }
    ~Benchmark() { cuda::set_cudnn_benchmark(false); }
  } on;
#ifdef OAT_CUDA_EMULATED
  const uint64_t finds = oat_emu::cudnn_find_calls();
#endif
  auto run = [](Device device, bool graph) {
    train::TrainerConfig cfg;
    cfg.epochs = 1;
    cfg.batch = 16;
    cfg.progress = false;
    cfg.device = device;
    cfg.cuda_graph = graph;
    train::Trainer t(models::lenet5(1), cfg);
    RunResult r;
    t.on_step = [&](int64_t, double loss) { r.losses.push_back(loss); };
    t.fit(random_images(40, 3), nullptr);  // two full batches (eager, then captured), one of 8
    r.state = t.state();
    r.graph = t.cuda_graph_status();
    return r;
  };
  const RunResult cpu = run(Device::CPU, false);
  const RunResult eager = run(Device::CUDA, false);
  const RunResult graph = run(Device::CUDA, true);
#ifdef OAT_CUDA_EMULATED
  // Conv forward, backward data and backward filter of each conv layer, per executor (the first
  // layer's backward data is not asked for).
  CHECK(oat_emu::cudnn_find_calls() - finds >= 6);
#endif
  CHECK(graph.graph == "on");
  REQUIRE(cpu.losses.size() == 3);
  REQUIRE(eager.losses.size() == 3);
  REQUIRE(graph.losses.size() == 3);
  for (size_t i = 0; i < cpu.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(eager.losses[i] == doctest::Approx(cpu.losses[i]).epsilon(1e-4));
    CHECK(graph.losses[i] == eager.losses[i]);
  }
  CHECK(state_error(eager, cpu) < 1e-4);
  CHECK(state_error(graph, eager) == 0.0);
}

TEST_CASE("Trainer on CUDA: training-mode Dropout draws the CPU's masks, also in a CUDA graph") {
  // Seeded: the CPU draws mask k of the run from the seed's MT19937 stream; the CUDA kernel draws
  // the same stream in a host function that the graph replays. Unseeded: both compute Philox draw
  // k, the CUDA kernel on the device with k in device memory, advanced at every replay. Either
  // way eager, graph and CPU keep the same units at every step.
  const RunResult cpu_plain = train_mlp(Device::CPU, false, "fp32", 100);
  for (const WithDropout kind : {WithDropout::Seeded, WithDropout::Unseeded}) {
    const std::string stream = kind == WithDropout::Seeded ? "seeded" : "unseeded";
    CAPTURE(stream);
    const RunResult cpu = train_mlp(Device::CPU, false, "fp32", 100, 65536.0, kind);
    REQUIRE(cpu.losses.size() == 8);
    CHECK(cpu.losses[0] != cpu_plain.losses[0]);  // the Dropout node is in the graph and drops
    if (!have_gpu()) continue;
    const RunResult eager = train_mlp(Device::CUDA, false, "fp32", 100, 65536.0, kind);
    const RunResult graph = train_mlp(Device::CUDA, true, "fp32", 100, 65536.0, kind);
    CHECK(graph.graph == "on");
    expect_eager_and_graph_follow(cpu, eager, graph);
  }
}

TEST_CASE("Trainer on CUDA: an unseeded RandomNormalLike is captured; a seeded one runs eagerly") {
  // Unseeded: Philox draw k of the node's key on both backends, the CUDA one on the device (its
  // draw number advanced by a kernel), so the step is captured and CPU, eager and graph follow
  // each other. Seeded: drawn on the host by the CPU kernel; a graph would replay one draw, so
  // the Trainer refuses the capture naming the node and trains eagerly, still equal to the CPU.
  const RunResult plain = train_mlp(Device::CPU, false, "fp32", 100);
  const RunResult cpu = train_mlp(Device::CPU, false, "fp32", 100, 65536.0, WithDropout::Noise);
  REQUIRE(cpu.losses.size() == 8);
  CHECK(cpu.losses[0] != plain.losses[0]);  // the noise is in the graph
  const RunResult cpu_seeded =
      train_mlp(Device::CPU, false, "fp32", 100, 65536.0, WithDropout::SeededNoise);
  if (!have_gpu()) return;
  const RunResult eager = train_mlp(Device::CUDA, false, "fp32", 100, 65536.0, WithDropout::Noise);
  const RunResult graph = train_mlp(Device::CUDA, true, "fp32", 100, 65536.0, WithDropout::Noise);
  CHECK(graph.graph == "on");
  expect_eager_and_graph_follow(cpu, eager, graph);
  const RunResult seeded =
      train_mlp(Device::CUDA, true, "fp32", 100, 65536.0, WithDropout::SeededNoise);
  CHECK(seeded.graph.find("off") == 0);
  CHECK(seeded.graph.find("noise") != std::string::npos);
  REQUIRE(seeded.losses.size() == cpu_seeded.losses.size());
  for (size_t i = 0; i < seeded.losses.size(); ++i)
    CHECK(seeded.losses[i] == doctest::Approx(cpu_seeded.losses[i]).epsilon(1e-4));
}

TEST_CASE("Trainer on CUDA: a Loop off the gradient path runs on the host, the step eagerly") {
  // The Loop halves the input twice; its body runs through a CPU executor in both trainers, and
  // the CUDA trainer's capture fails naming it, so every step is eager and follows the CPU.
  const RunResult plain = train_mlp(Device::CPU, false, "fp32", 100);
  const RunResult cpu = train_mlp(Device::CPU, false, "fp32", 100, 65536.0, WithDropout::Loop);
  REQUIRE(cpu.losses.size() == 8);
  CHECK(cpu.losses[0] != plain.losses[0]);  // the halving is in the graph
  if (!have_gpu()) return;
  const RunResult gpu = train_mlp(Device::CUDA, true, "fp32", 100, 65536.0, WithDropout::Loop);
  CAPTURE(gpu.graph);
  CHECK(gpu.graph.find("off") == 0);
  CHECK(gpu.graph.find("node 'loop' (Loop") != std::string::npos);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  for (size_t i = 0; i < gpu.losses.size(); ++i)
    CHECK(gpu.losses[i] == doctest::Approx(cpu.losses[i]).epsilon(1e-4));
}

TEST_CASE("Trainer on CUDA: FP16 dynamic loss scale skips the same steps as the CPU emulation") {
  if (!have_gpu()) return;
  // An initial scale of 2^100 overflows FP16 until it has backed off far enough.
  const double init = std::ldexp(1.0, 100);
  const RunResult cpu = train_mlp(Device::CPU, false, "fp16", 128, init);
  const RunResult gpu = train_mlp(Device::CUDA, true, "fp16", 128, init);
  CHECK(cpu.skipped > 0);
  CHECK(gpu.skipped == cpu.skipped);
  CHECK(gpu.scale == cpu.scale);
  CHECK(gpu.optimizer_step == cpu.optimizer_step);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  CHECK(state_error(gpu, cpu) < 5e-2);  // FP16 rounding differs in the order of sums only
}

TEST_CASE("Trainer on CUDA: the optimizer step is one launch for every parameter, the same bits "
          "as one launch per parameter") {
  if (!have_gpu()) return;
  for (const train::OptimizerKind kind : {train::OptimizerKind::SGD, train::OptimizerKind::AdamW}) {
    const bool sgd = kind == train::OptimizerKind::SGD;
    CAPTURE(sgd);
    auto run = [&](bool multi) {
      train::TrainerConfig cfg;
      cfg.epochs = 1;
      cfg.batch = 32;
      cfg.progress = false;
      cfg.device = Device::CUDA;
      cfg.cuda_graph = false;  // eager: every step launches its kernels
      cfg.graph.precision = DType::F16;
      cfg.graph.optimizer.kind = kind;
      cfg.graph.optimizer.momentum = sgd ? 0.9 : 0.0;
      cfg.graph.multi_tensor_updates = multi;
      cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
      train::Trainer t(models::mlp(1), cfg);
      t.fit(random_images(96, 5), nullptr);  // three steps
      CHECK(t.step() == 3);
      RunResult r;
      r.state = t.state();
      return std::make_pair(r, t.training_graph().params.size());
    };
#ifdef OAT_CUDA_EMULATED
    const char* single = sgd ? " sgd_kernel" : " adam_kernel";
    const char* fused = sgd ? " multi_sgd_kernel" : " multi_adam_kernel";
    const uint64_t single0 = oat_emu::kernel_launches(single), fused0 = oat_emu::kernel_launches(fused);
#endif
    const auto [multi, params] = run(true);
#ifdef OAT_CUDA_EMULATED
    CHECK(oat_emu::kernel_launches(fused) - fused0 == 3);
    CHECK(oat_emu::kernel_launches(single) - single0 == 0);
#endif
    const auto [each, params2] = run(false);
#ifdef OAT_CUDA_EMULATED
    CHECK(oat_emu::kernel_launches(fused) - fused0 == 3);
    CHECK(oat_emu::kernel_launches(single) - single0 == 3 * params);
#endif
    CHECK(params == params2);
    CHECK(params >= 4);
    REQUIRE(multi.state.size() == each.state.size());
    for (const auto& [name, t] : each.state) {
      CAPTURE(name);
      REQUIRE(multi.state.count(name));
      const Tensor& m = multi.state.at(name);
      CHECK(m.dtype() == t.dtype());
      CHECK(m.nbytes() == t.nbytes());
      CHECK(std::memcmp(m.raw_data(), t.raw_data(), t.nbytes()) == 0);
    }
  }
}

TEST_CASE("train and eval --device cuda through the binary") {
  TempDir dir;
  onnx_loader::save_graph(models::mlp(1), dir / "mlp.onnx");
  const train::Dataset d = random_images(64, 3);
  onnx_loader::write_npy(d.inputs, dir / "x.npy");
  onnx_loader::write_npy(d.targets, dir / "y.npy");
  const std::string out = dir / "trained.onnx";
  CliResult r = run_cli({dir / "mlp.onnx", "--train-x", dir / "x.npy", "--train-y", dir / "y.npy",
                         "--steps", "4", "--batch", "16", "--device", "cuda", "-o", out,
                         "--precision", "fp16"},
                        dir);
  CliResult e = run_cli({"eval", dir / "mlp.onnx", "--val-x", dir / "x.npy", "--val-y",
                         dir / "y.npy", "--device", "cuda"},
                        dir);
  if (cuda::device_count() == 0) {
    CHECK(r.status == 1);
    CHECK(r.err.find("error: no CUDA device") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK(e.status == 1);
    CHECK(e.err.find("error: no CUDA device") != std::string::npos);
  } else {
    INFO(r.out, r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("CUDA graph: on") != std::string::npos);
    CHECK(std::filesystem::exists(out));
    INFO(e.out, e.err);
    CHECK(e.status == 0);
    CHECK(e.out.find("accuracy") != std::string::npos);
  }
  r = run_cli({dir / "mlp.onnx", "--train-x", dir / "x.npy", "--train-y", dir / "y.npy",
               "--device", "tpu", "-o", out},
              dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("tpu") != std::string::npos);
}
