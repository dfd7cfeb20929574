// Gradients of the quantization ops: training through fake quantization, the pattern of PyTorch
// QAT models exported by torch.onnx (fake_quantize_per_tensor_affine / _per_channel_affine):
//
//   x -> QuantizeLinear(s, zp) -> q -> DequantizeLinear(s, zp) -> x̂ -> Conv / MatMul ...
//
// x̂ = (saturate(rint(x / s) + zp) − zp) · s. Its derivative is 0 almost everywhere, so training
// uses PyTorch's straight-through estimator:
//   dx = dx̂  where qmin <= rint(x / s) + zp <= qmax (the value was not clipped),  0 elsewhere,
// one internal op QuantizeLinearGrad(dx̂, x, s, zp) (runtime/cpu/kernels/quantize.cc).
//
// The gradient handed from DequantizeLinear to its integer input q is dx̂ itself, in the units of
// the dequantized value (not dx̂ · s, the derivative with respect to q's integer steps), so the
// pair gives exactly dx̂ · mask, as PyTorch, with no multiply and divide by s. That convention
// only holds when q goes straight from a QuantizeLinear to DequantizeLinears with the same scale,
// zero point and axis; anything else on the gradient path is refused, naming the node.
//
// scale and zero_point are not trained (PyTorch's FakeQuantize learns neither; its observers set
// them, and the export freezes them): they are non-differentiable inputs, so a float scale
// initializer never becomes a parameter. DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul and QLinearConv have no gradient (integer inference ops): a model that reaches
// them from a parameter fails naming the node.
#include <cstring>
#include <limits>

#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;

const Node* producer_of(const Graph& g, const std::string& v) {
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (o == v) return &n;
  return nullptr;
}

// The constant behind a scale / zero point: an initializer or a Constant node's `value`; an
// omitted zero point is uint8 0. Undefined when the value is computed.
Tensor constant_value(const Graph& g, const std::string& name) {
  if (name.empty()) {
    Tensor z(DType::U8, {});
    z.data<uint8_t>()[0] = 0;
    return z;
  }
  auto it = g.initializers.find(name);
  if (it != g.initializers.end()) return it->second;
  const Node* p = producer_of(g, name);
  if (p && p->op == OpId::Constant)
    if (const Attribute* a = p->attr("value"); a && a->kind == Attribute::Kind::Tensor) return a->t;
  return Tensor();
}

// Whether two scale / zero-point inputs hold the same values: the same name, or two constants of
// one dtype with equal elements (torch.onnx may write one Constant per node; untying merged
// initializers gives equal copies new names).
bool same_parameter(const Graph& g, const std::string& a, const std::string& b) {
  if (a == b) return true;
  const Tensor ta = constant_value(g, a), tb = constant_value(g, b);
  return ta.defined() && tb.defined() && ta.dtype() == tb.dtype() && ta.numel() == tb.numel() &&
         std::memcmp(ta.raw_data(), tb.raw_data(), ta.nbytes()) == 0;
}

// The axis that matters: the attribute for per-axis parameters, kPerTensor for a one-element
// scale (its axis is ignored).
constexpr int64_t kPerTensor = std::numeric_limits<int64_t>::min();
int64_t effective_axis(const Graph& g, const Node& n) {
  const Tensor s = constant_value(g, n.inputs.size() > 1 ? n.inputs[1] : "");
  return s.defined() && s.numel() == 1 ? kPerTensor : n.attr_int("axis", 1);
}

// DequantizeLinear: x̂ = (q − zp) · s. dq (in dequantized units, see the top) = dx̂.
void dequantize_grad(G& c) {
  const Node& n = c.node();
  const Node* q = producer_of(c.graph(), c.I(0));
  if (!q || q->op != OpId::QuantizeLinear)
    throw Error(cat(n.describe(), ": training through DequantizeLinear needs its input '", c.I(0),
                    "' to come from a QuantizeLinear (fake quantization); it comes from ",
                    q ? q->describe() : std::string("no node")));
  c.set_GI(0, c.GO(0));
}

// QuantizeLinear: q = saturate(rint(x / s) + zp). dx = QuantizeLinearGrad(dq, x, s, zp).
void quantize_grad(G& c) {
  const Node& n = c.node();
  const Graph& g = c.graph();
  const std::string zp = n.inputs.size() > 2 ? n.inputs[2] : "";
  for (const Node& r : g.nodes) {
    for (const auto& in : r.inputs) {
      if (in != c.O(0)) continue;
      const bool matches =
          r.op == OpId::DequantizeLinear && r.inputs[0] == c.O(0) &&
          same_parameter(g, r.inputs.size() > 1 ? r.inputs[1] : "", c.I(1)) &&
          same_parameter(g, r.inputs.size() > 2 ? r.inputs[2] : "", zp) &&
          effective_axis(g, r) == effective_axis(g, n);
      if (!matches)
        throw Error(cat(n.describe(), ": training through QuantizeLinear needs every reader of '",
                        c.O(0), "' to be a DequantizeLinear with the same scale, zero point and "
                        "axis (fake quantization, x -> QuantizeLinear -> DequantizeLinear); ",
                        r.describe(), " reads it"));
    }
  }
  std::map<std::string, Attribute> attrs;
  if (n.has_attr("axis")) attrs["axis"] = G::attr_int(n.attr_int("axis", 1));
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1)};
  if (!zp.empty()) ins.push_back(zp);
  c.set_GI(0, c.emit_grad_op("QuantizeLinearGrad", ins, attrs));
}

}  // namespace

void register_quantize_gradients(GradientRegistry& r) {
  r.add(OpId::QuantizeLinear, {quantize_grad, {1, 2}});
  r.add(OpId::DequantizeLinear, {dequantize_grad, {1, 2}});
}

}  // namespace oat::train
