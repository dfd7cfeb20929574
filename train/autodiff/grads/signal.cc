// Gradients of the signal ops (opset 17). DFT and STFT are linear in their signal (and STFT in its
// window), so their gradients are the adjoint maps, computed by DFTGrad / STFTGrad
// (runtime/cpu/kernels/dft.cc, formulas there):
//   DFT:  dX = DFTGrad(dY, X, dft_length, axis) with the forward's inverse/onesided/axis;
//   STFT: dSignal, dWindow = STFTGrad(dY, signal, frame_step, window, frame_length).
// dft_length, axis, frame_step and frame_length are integers: no gradient. The window and mel
// generators have none either (train/autodiff/grads/shape.cc).
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;
using Attrs = std::map<std::string, Attribute>;

void dft_grad(G& c) {
  const Node& n = c.node();
  Attrs attrs;
  attrs["inverse"] = G::attr_int(n.attr_int("inverse", 0));
  attrs["onesided"] = G::attr_int(n.attr_int("onesided", 0));
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1)};
  if (n.opset >= 20) {
    attrs["axis"] = G::attr_int(-2);
    ins.push_back(c.I(2));  // the axis input, when given
  } else {
    attrs["axis"] = G::attr_int(n.attr_int("axis", 1));
  }
  while (ins.back().empty()) ins.pop_back();
  c.set_GI(0, c.emit_grad_op("DFTGrad", ins, attrs));
}

void stft_grad(G& c) {
  const Node& n = c.node();
  Attrs attrs;
  attrs["onesided"] = G::attr_int(n.attr_int("onesided", 1));
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1), c.I(2), c.I(3)};
  while (ins.back().empty()) ins.pop_back();
  const bool want_w = c.needs_GI(2) && !c.I(2).empty();
  const std::vector<std::string> outs =
      c.emit_grad_op_outputs("STFTGrad", ins, attrs, {c.needs_GI(0), want_w});
  if (c.needs_GI(0)) c.set_GI(0, outs[0]);
  if (want_w) c.set_GI(2, outs[1]);
}

}  // namespace

void register_signal_gradients(GradientRegistry& r) {
  r.add(OpId::DFT, {dft_grad, {1, 2}});
  r.add(OpId::STFT, {stft_grad, {1, 3}});
}

}  // namespace oat::train
