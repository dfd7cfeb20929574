// RNN, GRU and LSTM as composite ops (runtime/composite.h): the shared parts of the unrolling
// (rnn.cc), the node-building helpers (rnn_builder.cc) and the three cells (rnn_cells.cc).
// Internal to runtime/composite/.
//
// Each direction is unrolled over the fixed sequence length: one MatMul of the whole X with Wᵀ
// (+ the biases that can be folded in) for all steps, then per step the recurrent MatMul
// H_{t-1}·Rᵀ, the gates and the state update, built from ops that have kernels on both backends
// and gradients. At t = 0 without initial_h / initial_c the previous state is zero, so its terms
// are left out (no zero constants).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/composite.h"

namespace oat::composite::rnn {

enum class Cell { RNN, GRU, LSTM };

// One activation of the `activations` attribute, with its alpha/beta (activation_alpha/beta).
struct Activation {
  std::string name;  // canonical ONNX spelling: "Sigmoid", "Tanh", "LeakyRelu", ...
  float alpha = 0.0f, beta = 0.0f;
};

// A state value, "" when it is zero (t = 0 without an initial state).
struct State {
  std::string h, c;
};

// Everything a cell step needs of one direction (built once per direction).
struct DirectionWeights {
  std::vector<Activation> acts;  // f (RNN); f, g (GRU); f, g, h (LSTM)
  std::string Rt;                // Rᵀ [H, G·H] (GRU with linear_before_reset = 0: unused)
  std::string Rt_zr, Rt_h;       // GRU, linear_before_reset = 0: [Rz; Rr]ᵀ [H, 2H], Rhᵀ [H, H]
  std::string Rbh;               // GRU, linear_before_reset = 1: Rbh [H] ("" without B)
  std::string Pi, Po, Pf;        // LSTM peepholes [H] ("" without P)
};

// The unrolling's context: the composite, its element type and sizes, and helpers that add a node
// and record its value's type and shape.
class Builder {
 public:
  Builder(Expansion& e, Cell cell);

  Expansion& e;
  const Cell cell;
  DType dt = DType::Undefined;  // X's element type: every float value and constant
  int64_t seq = 0, hidden = 0, gates = 1;
  Dim batch;                         // may be symbolic
  std::optional<float> clip;         // the `clip` attribute
  bool input_forget = false;         // LSTM
  bool linear_before_reset = false;  // GRU

  // A node with one fresh output named "<prefix>/<tag>", of type `type` (dt by default) and the
  // given shape; `out` non-empty writes that name instead (a composite output, no info recorded).
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::string& tag, std::optional<std::vector<Dim>> shape,
                 std::map<std::string, Attribute> attrs = {}, const std::string& out = "",
                 DType type = DType::Undefined);
  // Split of `x` along `axis` into parts of the given sizes (all other dims of `shape` kept).
  std::vector<std::string> split(const std::string& x, int64_t axis,
                                 const std::vector<int64_t>& sizes, const std::string& tag,
                                 const std::vector<Dim>& shape);
  // A scalar constant of type dt.
  std::string scalar(float v, const std::string& tag);

  // [batch, n]
  std::vector<Dim> bn(int64_t n) const { return {batch, Dim{n, ""}}; }

  // Clip(x, -clip, clip) when the attribute is set, else x. `x` is [batch, n].
  std::string clipped(const std::string& x, int64_t n, const std::string& tag);
  // activation(x), x [batch, n].
  std::string activate(const Activation& a, const std::string& x, int64_t n,
                       const std::string& tag);
  // activation(clip(x)): a gate's pre-activation through the clip and its activation.
  std::string gate(const Activation& a, const std::string& x, int64_t n, const std::string& tag) {
    return activate(a, clipped(x, n, tag + "_clip"), n, tag);
  }

 private:
  std::string clip_lo_, clip_hi_;  // the bounds, made at their first use
};

// The spec's default activations of one direction: f (RNN); f, g (GRU); f, g, h (LSTM).
std::vector<std::string> default_activations(Cell cell);

// The activations of each direction from `activations`, `activation_alpha`, `activation_beta`
// (rnn_builder.cc); fails naming the node on a wrong count or an unknown name.
std::vector<std::vector<Activation>> parse_activations(Expansion& e, Cell cell, int64_t dirs);

// One step of a cell: xw is Xt·Wᵀ + the folded biases [batch, G·H]; returns the new state (before
// sequence_lens masking). `tag` prefixes the step's values ("d0/t3").
State rnn_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
               const std::string& tag);
State gru_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
               const std::string& tag);
State lstm_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
                const std::string& tag);

}  // namespace oat::composite::rnn
