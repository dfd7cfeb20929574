// Multi-tensor optimizer updates (runtime/multi_update.h): MultiSGDUpdate / MultiAdamUpdate run
// every parameter's update in one node. On the CPU each group must give exactly (bit for bit)
// what the single SGDUpdate / AdamUpdate gives; the training graph merges its updates into one
// such node, and training with it equals training with per-parameter updates.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "models/zoo.h"
#include "runtime/executor.h"
#include "runtime/multi_update.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"
#include "train/trainer.h"

using namespace oat;
using oat_test::attr_f;
using oat_test::attr_i;

namespace {

// Runs `n` (its inputs fed from `feeds`, "" left out) and returns every named output.
std::map<std::string, Tensor> run(const Node& n, const std::map<std::string, Tensor>& feeds) {
  Graph g;
  g.opsets[""] = 17;
  g.opsets[kInternalDomain] = 1;
  g.nodes.push_back(n);
  for (const auto& [name, t] : feeds) g.inputs.push_back(ValueInfo{name, t.dtype(), std::nullopt});
  std::vector<std::string> fetch;
  for (const auto& o : n.outputs)
    if (!o.empty()) {
      g.outputs.push_back(ValueInfo{o, DType::Undefined, std::nullopt});
      fetch.push_back(o);
    }
  Executor ex(g);
  const std::vector<Tensor> out = ex.run(feeds);
  std::map<std::string, Tensor> r;
  for (size_t k = 0; k < fetch.size(); ++k) r[fetch[k]] = out[k];
  return r;
}

Tensor random(Shape s, uint32_t seed, bool positive = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(positive ? 0.0f : -1.0f, 1.0f);
  Tensor t(DType::F32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng) * (positive ? 1e-3f : 1.0f);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const std::vector<Shape> kShapes = {{40}, {3, 3000}, {0}, {7}};

}  // namespace

TEST_CASE("MultiSGDUpdate / MultiAdamUpdate: each group is its single update, bit for bit") {
  for (bool adam : {false, true})
    for (bool skip : {false, true}) {
      CAPTURE(adam);
      CAPTURE(skip);
      const MultiUpdateLayout l = multi_update_layout(adam ? OpId::MultiAdamUpdate : OpId::MultiSGDUpdate);
      std::map<std::string, Attribute> attrs = {{"weight_decay", attr_f(0.01f)},
                                                {"working_type", attr_i(adam ? 16 : 10)}};
      if (adam) attrs["decoupled"] = attr_i(1);
      else attrs["momentum"] = attr_f(0.9f);
      Node multi;
      multi.name = "optimizer";
      multi.op_type = adam ? "MultiAdamUpdate" : "MultiSGDUpdate";
      multi.op = op_from_name(multi.op_type);
      multi.domain = kInternalDomain;
      multi.opset = 1;
      multi.attrs = attrs;
      std::map<std::string, Tensor> feeds;
      for (size_t k = 0; k < kShapes.size(); ++k) {
        const std::string p = "p" + std::to_string(k);
        const uint32_t seed = static_cast<uint32_t>(10 * k);
        feeds[p] = random(kShapes[k], seed);
        feeds[p + ".g"] = random(kShapes[k], seed + 1);
        std::vector<std::string> in = {p, p + ".g"};
        std::vector<std::string> out = {p + "'"};
        if (adam) {
          feeds[p + ".m"] = random(kShapes[k], seed + 2);
          feeds[p + ".v"] = random(kShapes[k], seed + 3, true);
          in.insert(in.end(), {p + ".m", p + ".v"});
          out.insert(out.end(), {p + ".m'", p + ".v'"});
        } else {
          feeds[p + ".v"] = random(kShapes[k], seed + 2);
          in.push_back(p + ".v");
          out.push_back(p + ".v'");
        }
        // Working copies for even groups only: W (not read) and W'.
        const bool working = k % 2 == 0;
        if (working) feeds[p + ".w"] = cast_tensor(feeds[p], adam ? DType::BF16 : DType::F16);
        in.push_back(working ? p + ".w" : "");
        out.push_back(working ? p + ".w'" : "");
        multi.inputs.insert(multi.inputs.end(), in.begin(), in.end());
        multi.outputs.insert(multi.outputs.end(), out.begin(), out.end());
      }
      feeds["lr"] = Tensor::scalar<float>(0.05f);
      multi.inputs.push_back("lr");
      if (adam) {
        feeds["t"] = Tensor::scalar<int64_t>(3);
        multi.inputs.push_back("t");
      }
      if (skip) feeds["skip"] = Tensor::scalar<bool>(true);
      if (skip) multi.inputs.push_back("skip");
      else if (!adam) multi.inputs.push_back("");  // Adam: the trailing skip left out instead
      REQUIRE(multi_update_groups(multi) == static_cast<int>(kShapes.size()));
      const auto got = run(multi, feeds);
      for (int k = 0; k < static_cast<int>(kShapes.size()); ++k) {
        CAPTURE(k);
        const Node part = multi_update_part(multi, k);
        CHECK(part.op == l.single);
        CHECK(part.name == "optimizer[p" + std::to_string(k) + "]");
        const bool skip_omitted = adam && !skip;
        CHECK(part.inputs.size() == static_cast<size_t>(l.in_group - 1 + l.scalars - skip_omitted));
        std::map<std::string, Tensor> part_feeds;
        for (const auto& in : part.inputs)
          if (!in.empty()) part_feeds[in] = feeds.at(in);
        const auto want = run(part, part_feeds);
        for (const auto& [name, t] : want) {
          CAPTURE(name);
          REQUIRE(got.count(name));
          CHECK(same_bits(got.at(name), t));
          if (skip && name.back() == '\'' && name.find(".w") == std::string::npos)
            CHECK(same_bits(t, feeds.at(name.substr(0, name.size() - 1))));  // untouched
        }
        const bool working = k % 2 == 0;
        CHECK(want.count("p" + std::to_string(k) + ".w'") == (working ? 1u : 0u));
      }
    }
}

TEST_CASE("MultiSGDUpdate with inputs or outputs that do not fit its layout names the node") {
  Node n = oat_test::make_node_outputs("optimizer.sgd", "MultiSGDUpdate",
                                       {"p", "g", "v", "w", "q", "lr", ""}, {"p'", "v'", "w'"}, {}, 1);
  std::string what;
  try {
    multi_update_groups(n);
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("'optimizer.sgd'") != std::string::npos);
  CHECK(what.find("MultiSGDUpdate") != std::string::npos);
  CHECK(what.find("7 inputs; expected 4 per parameter and 2 scalars") != std::string::npos);
  n.inputs = {"p", "g", "v", "w", "lr", ""};
  n.outputs = {"p'", "v'"};
  CHECK_THROWS_WITH_AS(multi_update_groups(n),
                       doctest::Contains("2 outputs for 1 parameters; expected 3 per parameter"), Error);
  n.outputs = {"p'", "v'", "w'"};
  CHECK(multi_update_groups(n) == 1);
  CHECK_THROWS_AS(multi_update_layout(OpId::SGDUpdate), Error);
}

TEST_CASE("training graph: every update merged into one node; training equals per-parameter updates") {
  train::Dataset data{Tensor(DType::F32, {96, 1, 28, 28}), Tensor(DType::I64, {96})};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < data.inputs.numel(); ++i) data.inputs.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < 96; ++i) data.targets.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  for (const train::OptimizerKind kind :
       {train::OptimizerKind::SGD, train::OptimizerKind::Adam, train::OptimizerKind::AdamW})
    for (const DType precision : {DType::F32, DType::F16}) {
      CAPTURE(static_cast<int>(kind));
      CAPTURE(dtype_name(precision));
      train::TrainerConfig cfg;
      cfg.epochs = 1;
      cfg.batch = 32;
      cfg.progress = false;
      cfg.graph.precision = precision;
      cfg.graph.optimizer.kind = kind;
      cfg.graph.optimizer.momentum = kind == train::OptimizerKind::SGD ? 0.9 : 0.0;
      cfg.graph.optimizer.weight_decay = 0.01;
      if (precision == DType::F16) cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
      const Graph model = models::lenet5(1);
      train::Trainer merged(model, cfg);
      cfg.graph.multi_tensor_updates = false;
      train::Trainer each(model, cfg);
      // The graphs: one multi node holding every parameter against one single per parameter.
      const OpId single = kind == train::OptimizerKind::SGD ? OpId::SGDUpdate : OpId::AdamUpdate;
      const OpId fused = kind == train::OptimizerKind::SGD ? OpId::MultiSGDUpdate : OpId::MultiAdamUpdate;
      size_t singles = 0, multis = 0, merged_singles = 0;
      for (const Node& n : each.training_graph().graph.nodes) singles += n.op == single;
      for (const Node& n : merged.training_graph().graph.nodes) {
        merged_singles += n.op == single;
        if (n.op != fused) continue;
        ++multis;
        CHECK(multi_update_groups(n) == static_cast<int>(merged.training_graph().params.size()));
        if (precision == DType::F32) continue;  // no precision plan
        const convert::NodePrecision* p = merged.training_graph().plan.find(n.name);
        REQUIRE(p);
        CHECK(p->dtype == DType::F32);
      }
      CHECK(singles == each.training_graph().params.size());
      CHECK(multis == 1);
      CHECK(merged_singles == 0);
      if (precision != DType::F32)
        CHECK(merged.training_graph().plan.nodes.size() + singles - 1 ==
              each.training_graph().plan.nodes.size());
      // Three steps each: the same state, bit for bit.
      merged.fit(data, nullptr);
      each.fit(data, nullptr);
      REQUIRE(merged.step() == 3);
      REQUIRE(merged.state().size() == each.state().size());
      for (const auto& [name, t] : each.state()) {
        CAPTURE(name);
        CHECK(same_bits(merged.state().at(name), t));
      }
    }
}
