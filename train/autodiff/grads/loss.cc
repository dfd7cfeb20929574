// Gradients of the softmax family and the classification losses; the kernels are in
// runtime/cpu/kernels/grad_loss.cc, which spells out the reductions, weights and ignore_index.
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;
using Attrs = std::map<std::string, Attribute>;

// The axis attributes of a softmax-family gradient node: the forward's axis with its
// opset-dependent default (1 before opset 13, −1 after), and whether the forward coerced the
// input to 2-D at that axis (before opset 13) or ran along the single axis.
Attrs softmax_axis_attrs(const Node& n) {
  const bool coerce = n.opset < 13;
  return {{"axis", G::attr_int(n.attr_int("axis", coerce ? 1 : -1))},
          {"coerce_2d", G::attr_int(coerce ? 1 : 0)}};
}

// Softmax: dX = Y ⊙ (dY − Σ_axis(dY ⊙ Y))
void softmax_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("SoftmaxGrad", {c.GO(0), c.O(0)}, softmax_axis_attrs(c.node())));
}

// LogSoftmax: dX = dY − exp(Y) ⊙ Σ_axis dY
void log_softmax_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("LogSoftmaxGrad", {c.GO(0), c.O(0)}, softmax_axis_attrs(c.node())));
}

// reduction and ignore_index, as the forward node has them.
Attrs loss_attrs(const Node& n) {
  Attrs a;
  for (const char* k : {"reduction", "ignore_index"})
    if (const Attribute* v = n.attr(k)) a[k] = *v;
  return a;
}

// SoftmaxCrossEntropyLoss(scores, labels, [weights]) -> (loss, [log_prob])
//   from the loss:     dScores = (softmax − onehot(labels))·w·dLoss/ν   (one fused kernel)
//   from log_prob:     dScores += dLogProb − exp(log_prob) ⊙ Σ_C dLogProb   (LogSoftmax along 1)
// The fused kernel takes log_prob when the forward node produces it (softmax = exp(log_prob)),
// else the scores, from which it recomputes the softmax.
void softmax_cross_entropy_grad(G& c) {
  const bool has_log_prob = !c.O(1).empty();
  if (!c.GO(0).empty()) {
    Attrs a = loss_attrs(c.node());
    a["from_scores"] = G::attr_int(has_log_prob ? 0 : 1);
    c.set_GI(0, c.emit_grad_op("SoftmaxCrossEntropyLossGrad",
                               {c.GO(0), has_log_prob ? c.O(1) : c.I(0), c.I(1), c.I(2)}, a));
  }
  if (!c.GO(1).empty()) {
    Attrs a{{"axis", G::attr_int(1)}, {"coerce_2d", G::attr_int(0)}};
    c.set_GI(0, c.emit_grad_op("LogSoftmaxGrad", {c.GO(1), c.O(1)}, a));
  }
}

// NegativeLogLikelihoodLoss(input, target, [weight]):
//   dInput[n, c, d] = −[c == t]·w·dLoss/ν
void nll_loss_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("NegativeLogLikelihoodLossGrad",
                             {c.GO(0), c.shape_of(c.I(0)), c.I(1), c.I(2)}, loss_attrs(c.node())));
}

}  // namespace

void register_loss_gradients(GradientRegistry& r) {
  r.add(OpId::Softmax, {softmax_grad, {}});
  r.add(OpId::LogSoftmax, {log_softmax_grad, {}});
  r.add(OpId::SoftmaxCrossEntropyLoss, {softmax_cross_entropy_grad, {1, 2}});
  r.add(OpId::NegativeLogLikelihoodLoss, {nll_loss_grad, {1, 2}});
}

}  // namespace oat::train
