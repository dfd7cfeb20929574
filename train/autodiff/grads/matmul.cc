// Gradients of MatMul, Gemm and Det. MatMul and Gemm: one gradient op each (MatMulGrad, GemmGrad)
// that computes only the gradients asked for, with the GEMMs on the tensors in place
// (runtime/cpu/kernels/ grad_matmul.cc has the kernels).
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

// A Constant node holding t.
std::string constant(G& c, Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = std::move(t);
  return c.emit1("Constant", {}, {{"value", a}});
}

// Det: Y = det(A), A [*, n, n] (opset 11).  dA = dY · adj(A)ᵀ, the cofactor matrix:
//   dA[.., i, j] = dY[..] · (−1)^(i+j) · det(A without row i and column j)
// (Jacobi's formula; det(A)·A⁻ᵀ where A is invertible, and defined where it is not). The n²
// minors are gathered at once, rows R[i] = (0..n−1 without i) then columns likewise:
//   M = Transpose(Gather(Gather(A, R, axis −2), R, axis −1), [.., i, j, r, c]),  dA =
//   Unsqueeze(dY, [−2, −1]) · S · Det(M),  S[i, j] = (−1)^(i+j)
// n² determinants of (n−1)² matrices: meant for the small matrices Det sees (n ≤ ~16). A's rank
// and n must be known (declared or inferred).
void det_grad(G& c) {
  const Graph& g = c.graph();
  const std::string& a = c.I(0);
  const ValueInfo* vi = g.find_value_info(a);
  std::vector<int64_t> dims;
  if (auto it = g.initializers.find(a); it != g.initializers.end())
    dims = it->second.shape();
  else if (vi && vi->shape)
    for (const Dim& d : *vi->shape) dims.push_back(d.fixed() ? d.value : -1);
  const int64_t r = static_cast<int64_t>(dims.size());
  if (r < 2 || dims[r - 1] < 0 || dims[r - 1] != dims[r - 2])
    throw Error(cat(c.node().describe(), ": the gradient of Det needs the rank of '", a,
                    "' and its matrix size n (the last two dims, fixed and equal) to be known"));
  const int64_t n = dims[r - 1];
  const std::string dy = c.emit1(
      "Unsqueeze", {c.GO(0), constant(c, Tensor::from_vector<int64_t>({2}, {r - 2, r - 1}))});
  if (n == 1) {  // det(A) = a: dA = dY
    c.set_GI(0, dy);
    return;
  }
  std::vector<int64_t> rest;
  std::vector<float> sign;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      if (k != i) rest.push_back(k);
      sign.push_back((i + k) % 2 ? -1.0f : 1.0f);
    }
  const std::string table = constant(c, Tensor::from_vector<int64_t>({n, n - 1}, rest));
  const std::string rows = c.emit1("Gather", {a, table}, {{"axis", G::attr_int(r - 2)}});
  const std::string both = c.emit1("Gather", {rows, table}, {{"axis", G::attr_int(r)}});
  // both: [.., i, r, j, c] (the batch dims, then n, n−1, n, n−1)
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < r - 2; ++d) perm.push_back(d);
  for (int64_t d : {r - 2, r, r - 1, r + 1}) perm.push_back(d);
  const std::string minors = c.emit1("Transpose", {both}, {{"perm", G::attr_ints(perm)}});
  const std::string signs =
      c.emit1("CastLike", {constant(c, Tensor::from_vector<float>({n, n}, sign)), dy});
  const std::string cof = c.emit1("Mul", {c.emit1("Det", {minors}), signs});
  c.set_GI(0, c.emit1("Mul", {dy, cof}));
}

}  // namespace

void register_matmul_gradients(GradientRegistry& r) {
  r.add(OpId::MatMul, {matmul_grad, {}});
  r.add(OpId::Gemm, {gemm_grad, {}});
  r.add(OpId::Det, {det_grad, {}});
}

}  // namespace oat::train
