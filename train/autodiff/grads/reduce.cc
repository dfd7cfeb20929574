// Gradients of the reductions.
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;

// ReduceSum:  dX = broadcast(dY) over the reduced axes
// ReduceMean: dX = broadcast(dY) / count
// Axes come as an attribute, or as input 1 (ReduceSum from opset 13, the others from 18).
void reduce_grad(G& c, bool mean) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  for (const char* k : {"axes", "keepdims", "noop_with_empty_axes"})
    if (const Attribute* a = n.attr(k)) attrs[k] = *a;
  attrs["mean"] = G::attr_int(mean ? 1 : 0);
  std::vector<std::string> ins = {c.GO(0), c.shape_of(c.I(0))};
  if (!c.I(1).empty()) ins.push_back(c.I(1));
  c.set_GI(0, c.emit_grad_op("ReduceGrad", ins, attrs));
}

void reduce_sum_grad(G& c) { reduce_grad(c, false); }
void reduce_mean_grad(G& c) { reduce_grad(c, true); }

}  // namespace

void register_reduce_gradients(GradientRegistry& r) {
  r.add(OpId::ReduceSum, {reduce_sum_grad, {1}});
  r.add(OpId::ReduceMean, {reduce_mean_grad, {1}});
}

}  // namespace oat::train
