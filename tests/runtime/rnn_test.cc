// RNN, GRU and LSTM as composite ops (runtime/composite/rnn.cc), run by the Executor on the CPU
// against a naive double-precision reference (tests/runtime/rnn_reference.h) on random inputs:
// every op in every direction, layout 1, sequence_lens (also reversed), initial states, clip,
// input_forget, peepholes, linear_before_reset 0 and 1, non-default activations, omitted outputs,
// an F16 run, a symbolic batch; and the errors, which name the node.
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/composite.h"
#include "runtime/executor.h"
#include "tests/runtime/rnn_reference.h"

using namespace oat;
using oat_test::rnn::Act;
using oat_test::rnn::Case;

namespace {

// Whether g has a fused LSTMSequence or GRUSequence node.
bool has_fused(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) {
    return n.op == OpId::LSTMSequence || n.op == OpId::GRUSequence;
  });
}

// Runs case `c` with `batch` rows fed (the graph's batch may be symbolic) and checks every output,
// twice: as the CPU Executor lowers it (an F32 LSTM with the default activations and no
// sequence_lens as one fused LSTMSequence node, a GRU likewise), and unrolled, as training graphs
// and the CUDA executor run it. Returns whether the Executor used the fused kernel.
bool check_case(Case c, double atol = 2e-5, double rtol = 1e-4) {
  const auto in = oat_test::rnn::make_inputs(c);
  std::map<std::string, Tensor> feeds;
  const Graph g = oat_test::rnn::graph(c, in, feeds);
  Executor ex(g);
  Graph unrolled = g;
  lower_composites(unrolled);
  REQUIRE_FALSE(has_fused(unrolled));
  Executor ex_unrolled(unrolled);
  const bool fused = has_fused(ex.graph());
  const auto want = oat_test::rnn::expected(c, oat_test::rnn::reference(c, in));
  for (Executor* e : {&ex, &ex_unrolled}) {
    const std::string path = e == &ex ? (fused ? "fused" : "cpu lowering, unrolled") : "unrolled";
    CAPTURE(path);
    const auto got = e->run(feeds);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      CAPTURE(want[k].first);
      CHECK(got[k].dtype() == c.dtype);
      REQUIRE(static_cast<size_t>(got[k].numel()) == want[k].second.size());
      double worst = 0;
      size_t bad = 0;
      for (size_t i = 0; i < want[k].second.size(); ++i) {
        const double a = got[k].item_as_double(static_cast<int64_t>(i)), b = want[k].second[i];
        const double err = std::abs(a - b);
        worst = std::max(worst, err);
        if (!(err <= atol + rtol * std::abs(b))) ++bad;
      }
      CAPTURE(worst);
      CHECK(bad == 0);
    }
  }
  return fused;
}

Case make(const std::string& op, const std::string& direction = "forward") {
  Case c;
  c.op = op;
  c.direction = direction;
  return c;
}

// Large enough for one chain per thread in the fused kernels (directions, then blocks of rows).
Case big_case(const std::string& op, const std::string& direction) {
  Case c = make(op, direction);
  c.seq = 16;
  c.batch = 8;
  c.input = 32;
  c.hidden = 128;
  c.init_h = true;
  return c;
}

std::string error_of(const Case& c) {
  const auto in = oat_test::rnn::make_inputs(c);
  std::map<std::string, Tensor> feeds;
  Graph g = oat_test::rnn::graph(c, in, feeds);
  try {
    Executor ex(g);
    ex.run(feeds);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("RNN/GRU/LSTM: every op in every direction matches the reference") {
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      CAPTURE(op);
      CAPTURE(dir);
      check_case(make(op, dir));
      Case c = make(op, dir);  // initial states, no bias
      c.bias = false;
      c.init_h = c.init_c = true;
      c.seed = 2;
      check_case(c);
    }
}

TEST_CASE("RNN/GRU/LSTM: layout 1 (batch first), opset 7, one step, hidden_size from R") {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    CAPTURE(op);
    Case c = make(op, "bidirectional");
    c.layout = 1;
    c.init_h = c.init_c = true;
    c.seed = 3;
    check_case(c);
    Case old = make(op, "reverse");
    old.opset = 7;
    old.hidden_attr = false;
    check_case(old);
    Case one = make(op, "bidirectional");
    one.seq = 1;
    one.lens = {1, 0};
    check_case(one);
  }
}

TEST_CASE(
    "RNN/GRU/LSTM: sequence_lens hold the state and zero Y; reverse starts at the last valid "
    "step") {
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      CAPTURE(op);
      CAPTURE(dir);
      Case c = make(op, dir);
      c.seq = 5;
      c.batch = 4;
      c.lens = {5, 2, 0, 3};
      check_case(c);
      c.init_h = c.init_c = true;  // a row of length 0 keeps its initial state
      c.layout = 1;
      c.seed = 4;
      check_case(c);
    }
}

TEST_CASE("RNN/GRU/LSTM: clip, input_forget, peepholes, linear_before_reset") {
  Case c = make("LSTM", "bidirectional");
  c.clip = 0.4f;
  c.init_h = c.init_c = true;
  check_case(c);
  c.clip.reset();
  c.peepholes = true;
  check_case(c);
  c.input_forget = 1;
  check_case(c);
  c.peepholes = false;
  check_case(c);
  c.init_c = false;  // peepholes at t = 0 without initial_c
  c.peepholes = true;
  c.input_forget = 0;
  c.lens = {3, 1};
  check_case(c);
  for (int64_t lbr : {0, 1})
    for (bool bias : {true, false})
      for (bool init : {true, false}) {
        CAPTURE(lbr);
        CAPTURE(bias);
        CAPTURE(init);
        Case g = make("GRU", "bidirectional");
        g.linear_before_reset = lbr;
        g.bias = bias;
        g.init_h = init;
        g.clip = 0.7f;
        g.lens = {2, 3};
        check_case(g);
      }
  Case r = make("RNN", "reverse");
  r.clip = 0.3f;
  check_case(r);
}

TEST_CASE("RNN/GRU/LSTM: non-default activations with activation_alpha/beta") {
  Case l = make("LSTM", "bidirectional");
  l.acts = {{"HardSigmoid", 0.3f, 0.4f},
            {"ScaledTanh", 1.5f, 0.7f},
            {"Affine", 0.8f, 0.1f},
            {"Sigmoid"},
            {"Softsign"},
            {"Elu", 0.5f}};
  l.init_h = l.init_c = true;
  check_case(l);
  Case g = make("GRU", "reverse");
  g.acts = {{"Sigmoid"}, {"LeakyRelu", 0.2f}};
  check_case(g);
  Case g2 = make("GRU");
  g2.acts = {{"HardSigmoid", 0.25f, 0.45f}, {"Softplus"}};
  check_case(g2);
  for (const Act& a : {Act{"Relu"}, Act{"Sigmoid"}, Act{"ThresholdedRelu", 0.1f}, Act{"Softsign"},
                       Act{"Elu", 1.3f}, Act{"Affine", 0.5f, -0.2f}}) {
    CAPTURE(a.name);
    Case r = make("RNN");
    r.acts = {a};
    check_case(r);
  }
  // Names are case-insensitive (as in ONNX Runtime); without activation_alpha/beta each takes
  // its operator's defaults.
  Case lower = make("GRU");
  lower.acts = {{"hardsigmoid", 0.2f, 0.5f}, {"leakyrelu", 0.01f}};
  check_case(lower);
  lower.alpha_beta_attrs = false;
  check_case(lower);
}

TEST_CASE("RNN/GRU/LSTM: Y, Y_h and Y_c may each be omitted") {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    CAPTURE(op);
    Case c = make(op, "bidirectional");
    c.y = false;
    check_case(c);
    c.y = true;
    c.y_h = false;
    c.lens = {1, 3};
    check_case(c);
    c.y = false;
    c.y_h = true;
    c.y_c = false;
    check_case(c);
  }
}

TEST_CASE("RNN/GRU/LSTM: F16 runs within F16's tolerance of the double reference") {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    CAPTURE(op);
    Case c = make(op, "bidirectional");
    c.dtype = DType::F16;
    c.init_h = c.init_c = true;
    c.lens = {3, 2};
    c.clip = 0.9f;
    check_case(c, 2e-2, 2e-2);
  }
}

TEST_CASE("RNN/GRU/LSTM: a symbolic batch dim; the expansion records types and shapes") {
  Case c = make("LSTM", "bidirectional");
  c.symbolic_batch = true;
  c.batch = 3;
  c.lens = {2, 3, 1};
  check_case(c);
  const auto in = oat_test::rnn::make_inputs(c);
  std::map<std::string, Tensor> feeds;
  Graph g = oat_test::rnn::graph(c, in, feeds);
  lower_composites(g);
  const ValueInfo& h = g.value_info.at("rnn0/d1/t0/H");
  CHECK(h.dtype == DType::F32);
  REQUIRE(h.shape);
  CHECK(h.shape_string() == "[batch, 3]");
  CHECK(g.value_info.at("rnn0/t0/valid").dtype == DType::Bool);
  CHECK(g.value_info.at("rnn0/reverse_index").dtype == DType::I64);
  for (const Node& n : g.nodes) CHECK(n.name.rfind("rnn0/", 0) == 0);
}

TEST_CASE("RNN/GRU/LSTM: the expansion's shape: one input MatMul per direction, no zero state") {
  Case c = make("LSTM");
  c.seq = 4;
  const auto in = oat_test::rnn::make_inputs(c);
  std::map<std::string, Tensor> feeds;
  Graph g = oat_test::rnn::graph(c, in, feeds);
  lower_composites(g);
  int matmuls = 0;
  for (const Node& n : g.nodes) matmuls += n.op == OpId::MatMul;
  CHECK(matmuls == 1 + 3);  // X·Wᵀ once; H·Rᵀ at t = 1, 2, 3 (t = 0 has no previous state)
  for (const auto& [name, t] : g.initializers) {
    CAPTURE(name);
    CHECK_FALSE(is_floating(t.dtype()));  // no zero constants, no float constants at all
  }
  CHECK(g.nodes.back().outputs[0] == "Y_c");
}

TEST_CASE(
    "LSTM/GRU: the CPU Executor fuses F32 LSTMs and GRUs with the default activations and no "
    "sequence_lens, threads whole chains, and unrolls the rest") {
  Case c = make("LSTM", "bidirectional");
  CHECK(check_case(c));
  c.layout = 1;
  c.init_h = c.init_c = true;
  c.peepholes = true;
  c.clip = 0.5f;
  c.symbolic_batch = true;
  CHECK(check_case(c));
  c.y = c.y_c = false;
  CHECK(check_case(c));
  // Large enough for one chain per thread (directions, then blocks of batch rows): the threaded
  // path gives the reference's numbers too.
  for (const char* dir : {"forward", "bidirectional"}) {
    CAPTURE(dir);
    CHECK(check_case(big_case("LSTM", dir), 1e-4, 1e-4));
  }
  Case lens = make("LSTM");
  lens.lens = {3, 1};
  CHECK_FALSE(check_case(lens));
  Case half = make("LSTM");
  half.dtype = DType::F16;
  CHECK_FALSE(check_case(half, 2e-2, 2e-2));
  Case acts = make("LSTM");
  acts.acts = {{"Sigmoid"}, {"Tanh"}, {"Softsign"}};
  CHECK_FALSE(check_case(acts));
  CHECK_FALSE(check_case(make("RNN")));
  // GRU: both linear_before_reset forms, with and without B and initial_h, clip, layout 1, the
  // threaded path; sequence_lens and other activations stay unrolled.
  for (int64_t lbr : {0, 1}) {
    CAPTURE(lbr);
    Case g = make("GRU", "bidirectional");
    g.linear_before_reset = lbr;
    CHECK(check_case(g));
    g.bias = false;
    g.init_h = true;
    g.clip = 0.6f;
    g.layout = 1;
    CHECK(check_case(g));
    g.bias = true;
    g.init_h = false;
    g.y = false;
    CHECK(check_case(g));
    Case big = big_case("GRU", lbr ? "forward" : "reverse");
    big.linear_before_reset = lbr;
    CHECK(check_case(big, 1e-4, 1e-4));
    Case lens = make("GRU");
    lens.linear_before_reset = lbr;
    lens.lens = {3, 1};
    CHECK_FALSE(check_case(lens));
  }
  Case gacts = make("GRU");
  gacts.acts = {{"Sigmoid"}, {"Softsign"}};
  CHECK_FALSE(check_case(gacts));
}

TEST_CASE("RNN/GRU/LSTM: errors name the node") {
  const std::string prefix = "node 'rnn0' (LSTM, opset 14): ";
  Case c = make("LSTM");
  {
    const auto in = oat_test::rnn::make_inputs(c);
    std::map<std::string, Tensor> feeds;
    Graph g = oat_test::rnn::graph(c, in, feeds);
    g.inputs[0].shape = std::vector<Dim>{Dim{-1, "seq"}, Dim{2, ""}, Dim{4, ""}};
    try {
      lower_composites(g);
      FAIL("no error");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.rfind(prefix, 0) == 0);
      CHECK(m.find("X 'X' has shape [seq, 2, 4]") != std::string::npos);
      CHECK(m.find("unrolled over the sequence length, which must be a fixed dim 0") !=
            std::string::npos);
    }
    g.inputs[0].shape.reset();
    CHECK_THROWS_WITH_AS(lower_composites(g), doctest::Contains("X 'X' has shape ?"), Error);
  }
  Case d = c;
  d.direction = "sideways";
  CHECK(error_of(d) == prefix + "direction 'sideways' is not forward, reverse or bidirectional");
  Case a = c;
  a.acts = {{"Sigmoid"}, {"Tanh"}};
  CHECK(error_of(a) ==
        prefix + "'activations' has 2 entries; LSTM takes 3 per direction (3 for 1 direction)");
  a.acts = {{"Sigmoid"}, {"Tanh"}, {"Swish"}};
  CHECK(error_of(a).rfind(prefix + "unknown activation 'Swish'", 0) == 0);
  Case l = c;
  l.opset = 7;
  l.layout = 1;
  CHECK(
      error_of(l) ==
      "node 'rnn0' (LSTM, opset 7): attribute 'layout' exists from opset 14; this node is opset 7");
  Case k = c;
  k.clip = -1.0f;
  CHECK(error_of(k) == prefix + "clip must be positive, got -1");
  Case h = c;
  h.hidden = 3;
  {
    const auto in = oat_test::rnn::make_inputs(h);
    std::map<std::string, Tensor> feeds;
    Graph g = oat_test::rnn::graph(h, in, feeds);
    g.nodes[0].attrs["hidden_size"] = oat_test::rnn::a_int(5);
    CHECK_THROWS_WITH_AS(lower_composites(g),
                         (prefix + "input W 'W' has shape [1, 12, 4], expected [1, 20, 4]").c_str(),
                         Error);
  }
  Case old = make("GRU");
  old.opset = 3;
  old.name = "g";
  try {
    const auto in = oat_test::rnn::make_inputs(old);
    std::map<std::string, Tensor> feeds;
    Graph g = oat_test::rnn::graph(old, in, feeds);
    lower_composites(g);
    FAIL("no error");
  } catch (const Unsupported& u) {
    CHECK(std::string(u.what()).rfind("node 'g' (GRU, opset 3): ", 0) == 0);
    CHECK(u.key() == "GRU(opset 3)");
  }
}
