// Double-precision finite-difference checks of RNN, GRU and LSTM (composite ops,
// runtime/composite/rnn.cc): the gradients come from autodiff over their expansion (MatMul,
// Split, the activations, Where for sequence_lens, GatherElements for the reversed direction),
// with respect to every float input, through Y, Y_h and Y_c at once.
#include <cmath>

#include "grad_check.h"

using namespace oat;
using oat::test::fixed;
using oat::test::GradCheckCase;
using oat::test::in;
using oat::test::omitted;

namespace {

Attribute i_attr(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute s_attr(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

constexpr int64_t kSeq = 3, kBatch = 2, kIn = 3, kH = 2;

// X [seq, batch, input] (layout 0), bidirectional unless told, sequence_lens {3, 1}.
GradCheckCase rnn_case(const std::string& op, const std::string& direction = "bidirectional") {
  const int64_t G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  GradCheckCase c;
  c.op = op;
  c.opset = 14;
  c.declare_shapes = true;
  c.attrs = {{"hidden_size", i_attr(kH)}, {"direction", s_attr(direction)}};
  c.inputs = {in({kSeq, kBatch, kIn}),
              in({D, G * kH, kIn}),
              in({D, G * kH, kH}),
              in({D, 2 * G * kH}),
              fixed(Tensor::from_vector<int32_t>({kBatch}, {3, 1})),
              in({D, kBatch, kH})};
  if (op == "LSTM") {
    c.inputs.push_back(in({D, kBatch, kH}));  // initial_c
    c.inputs.push_back(in({D, 3 * kH}));      // P
  }
  c.num_outputs = op == "LSTM" ? 3 : 2;
  c.checked_outputs = op == "LSTM" ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1};
  return c;
}

}  // namespace

TEST_CASE("grad LSTM: bidirectional, sequence_lens, initial states, peepholes") {
  oat::test::check_gradients(rnn_case("LSTM"));
}

TEST_CASE("grad LSTM: input_forget, no bias, no sequence_lens, reverse") {
  GradCheckCase c = rnn_case("LSTM", "reverse");
  c.attrs["input_forget"] = i_attr(1);
  c.inputs[3] = omitted();
  c.inputs[4] = omitted();
  oat::test::check_gradients(c);
}

TEST_CASE("grad GRU: linear_before_reset 0 and 1, bidirectional, sequence_lens") {
  for (int64_t lbr : {0, 1}) {
    CAPTURE(lbr);
    GradCheckCase c = rnn_case("GRU");
    c.attrs["linear_before_reset"] = i_attr(lbr);
    oat::test::check_gradients(c);
  }
}

TEST_CASE("grad RNN: layout 1, reverse, without initial_h") {
  GradCheckCase c = rnn_case("RNN", "reverse");
  c.attrs["layout"] = i_attr(1);
  c.inputs[0] = in({kBatch, kSeq, kIn});
  c.inputs[5] = omitted();
  oat::test::check_gradients(c);
  GradCheckCase b = rnn_case("RNN");  // bidirectional, sequence_lens, initial_h
  oat::test::check_gradients(b);
}
