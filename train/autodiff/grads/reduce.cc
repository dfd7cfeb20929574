// Gradients of the reductions, CumSum and TopK.
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

// The reductions whose dX needs X and Y (kernel: runtime/cpu/kernels/grad_reduce.cc), with
// g = broadcast(dY) and y = broadcast(Y) over the reduced axes:
//   ReduceMax/ReduceMin: dX = g·[X = y] / #ties       ReduceProd:      dX = g·Π_{k≠i} X_k
//   ReduceSumSquare:     dX = 2·g·X                   ReduceL1:        dX = g·sign(X)
//   ReduceL2:            dX = g·X / y  (0 at y = 0)   ReduceLogSum:    dX = g·exp(−y)
//   ReduceLogSumExp:     dX = g·exp(X − y)
void reduce_xy_grad(G& c) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  for (const char* k : {"axes", "keepdims", "noop_with_empty_axes"})
    if (const Attribute* a = n.attr(k)) attrs[k] = *a;
  Attribute op;
  op.kind = Attribute::Kind::String;
  op.s = n.op_type;
  attrs["reduce"] = op;
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.O(0)};
  if (!c.I(1).empty()) ins.push_back(c.I(1));
  c.set_GI(0, c.emit_grad_op("ReduceXYGrad", ins, attrs));
}

// CumSum: Y_k = Σ_{j ≤ k} X_j (exclusive: j < k; reverse: from the end), so
//   dX_j = Σ_{k ≥ j} dY_k: dX = CumSum(dY) with the same 'exclusive' and the opposite 'reverse'.
void cumsum_grad(G& c) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  attrs["exclusive"] = G::attr_int(n.attr_int("exclusive", 0));
  attrs["reverse"] = G::attr_int(n.attr_int("reverse", 0) != 0 ? 0 : 1);
  c.set_GI(0, c.emit1("CumSum", {c.GO(0), c.I(1)}, attrs));
}

// TopK: Values = GatherElements(X, Indices) along the same axis, so
//   dX = 0; dX[p with Indices[p] on axis] += dValues[p]: GatherElementsGrad(dValues, shape(X),
//   Indices) with TopK's axis (default -1, spelt out: GatherElements' default is 0). The indices
//   of one lane are distinct, so the scatter-add adds nothing twice. Indices (output 1) are
//   integers and piecewise constant in X: a gradient reaching them contributes nothing; K (input 1)
//   is not differentiable.
void topk_grad(G& c) {
  if (c.GO(0).empty()) return;
  if (c.O(1).empty())
    throw Error(cat(c.node().describe(), ": the gradient of TopK needs its Indices output (1), "
                                         "which the node does not name"));
  std::map<std::string, Attribute> attrs;
  attrs["axis"] = G::attr_int(c.node().attr_int("axis", -1));
  c.set_GI(0, c.emit_grad_op("GatherElementsGrad", {c.GO(0), c.shape_of(c.I(0)), c.O(1)}, attrs));
}

}  // namespace

void register_reduce_gradients(GradientRegistry& r) {
  r.add(OpId::ReduceSum, {reduce_sum_grad, {1}});
  r.add(OpId::ReduceMean, {reduce_mean_grad, {1}});
  for (OpId op : {OpId::ReduceMax, OpId::ReduceMin, OpId::ReduceProd, OpId::ReduceSumSquare,
                  OpId::ReduceL1, OpId::ReduceL2, OpId::ReduceLogSum, OpId::ReduceLogSumExp})
    r.add(op, {reduce_xy_grad, {1}});
  r.add(OpId::CumSum, {cumsum_grad, {1}});
  r.add(OpId::TopK, {topk_grad, {1}});
}

}  // namespace oat::train
