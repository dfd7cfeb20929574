// Gradients of MatMul and Gemm: one gradient op each (MatMulGrad, GemmGrad) that computes only
// the gradients asked for, with the GEMMs on the tensors in place (runtime/cpu/kernels/
// grad_matmul.cc has the kernels).
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;

// MatMul: Y = A·B (numpy: 1-D operands, broadcast batch dims).
//   dA = sum_to(dY·Bᵀ, A),  dB = sum_to(Aᵀ·dY, B)    (per batch entry; 1-D operands as [1,K]/[K,1])
void matmul_grad(G& c) {
  auto out = c.emit_grad_op_outputs("MatMulGrad", {c.GO(0), c.I(0), c.I(1)}, {},
                                    {c.needs_GI(0), c.needs_GI(1)});
  for (int i = 0; i < 2; ++i)
    if (c.needs_GI(i)) c.set_GI(i, out[i]);
}

// Gemm: Y = α·A'·B' + β·C, A' = transA ? Aᵀ : A, B' = transB ? Bᵀ : B.
//   dA' = α·dY·B'ᵀ,  dB' = α·A'ᵀ·dY,  dC = β·sum_to(dY, C)
void gemm_grad(G& c) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  attrs["transA"] = G::attr_int(n.attr_int("transA", 0));
  attrs["transB"] = G::attr_int(n.attr_int("transB", 0));
  attrs["alpha"] = G::attr_float(n.attr_float("alpha", 1.0f));
  attrs["beta"] = G::attr_float(n.attr_float("beta", 1.0f));
  const bool has_c = !c.I(2).empty();
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1)};
  if (has_c) ins.push_back(c.I(2));
  auto out = c.emit_grad_op_outputs("GemmGrad", ins, attrs,
                                    {c.needs_GI(0), c.needs_GI(1), has_c && c.needs_GI(2)});
  for (int i = 0; i < 3; ++i)
    if (c.needs_GI(i) && !out[i].empty()) c.set_GI(i, out[i]);
}

}  // namespace

void register_matmul_gradients(GradientRegistry& r) {
  r.add(OpId::MatMul, {matmul_grad, {}});
  r.add(OpId::Gemm, {gemm_grad, {}});
}

}  // namespace oat::train
