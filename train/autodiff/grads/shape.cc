// Gradients of the shape and data-movement ops, the casts and Dropout. Views take the gradient
// back to X's shape; copies run their adjoint (a dedicated *Grad kernel in
// runtime/cpu/kernels/grad_movement.cc, whose header gives each one's math). Shape inputs,
// indices, pads, repeats, axes, ratios and the like are not differentiable. Shape, Size,
// ConstantOfShape, Range and the comparisons need no builder: nothing flows through them.
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;
using Attrs = std::map<std::string, Attribute>;

// The attributes `keys` copied from the forward node where present.
Attrs copy_attrs(const Node& n, std::initializer_list<const char*> keys) {
  Attrs a;
  for (const char* k : keys)
    if (const Attribute* v = n.attr(k)) a[k] = *v;
  return a;
}

// `inputs` without trailing omitted ("") optional inputs.
std::vector<std::string> trimmed(std::vector<std::string> inputs) {
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  return inputs;
}

// A 1-D int64 Constant.
std::string ints_constant(G& c, const std::vector<int64_t>& v) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  return c.emit1("Constant", {}, {{"value", a}});
}

// dX = Reshape(dY, shape(X)) with allowzero, so an empty dimension stays 0.
std::string reshape_to(G& c, const std::string& g, const std::string& like) {
  return c.emit1("Reshape", {g, c.shape_of(like)}, {{"allowzero", G::attr_int(1)}});
}

// Reshape, Flatten, Squeeze, Unsqueeze: dX = Reshape(dY, shape(X))
void reshape_grad(G& c) { c.set_GI(0, reshape_to(c, c.GO(0), c.I(0))); }

// Identity: dX = dY
void identity_grad(G& c) { c.set_GI(0, c.GO(0)); }

// Transpose: Y = transpose(X, p)  ⇒  dX = transpose(dY, p⁻¹), p⁻¹[p[k]] = k (the default,
// reversed axes, is its own inverse).
void transpose_grad(G& c) {
  const Node& n = c.node();
  Attrs attrs;
  if (n.has_attr("perm")) {
    const std::vector<int64_t> perm = n.attr_ints("perm");
    const int64_t r = static_cast<int64_t>(perm.size());
    std::vector<int64_t> inv(perm.size(), -1);
    for (int64_t k = 0; k < r; ++k) {
      const int64_t p = perm[k] < 0 ? perm[k] + r : perm[k];
      if (p < 0 || p >= r || inv[p] >= 0)
        throw Error(cat(n.describe(), ": perm ", shape_str(perm), " is not a permutation"));
      inv[p] = k;
    }
    attrs["perm"] = G::attr_ints(inv);
  }
  c.set_GI(0, c.emit1("Transpose", {c.GO(0)}, attrs));
}

// Concat: Y = [X_0 | X_1 | ...] along axis  ⇒  dX_k = dY[.., offset_k : offset_k + n_k, ..]
// (ConcatGrad, one node for all inputs; inputs without a wanted gradient are not copied).
void concat_grad(G& c) {
  const Node& n = c.node();
  const int count = static_cast<int>(n.inputs.size());
  std::vector<std::string> ins = {c.GO(0)};
  std::vector<bool> wanted;
  for (int k = 0; k < count; ++k) {
    ins.push_back(c.shape_of(c.I(k)));
    wanted.push_back(c.needs_GI(k));
  }
  auto outs = c.emit_grad_op_outputs("ConcatGrad", ins,
                                     {{"axis", G::attr_int(n.attr_int("axis", 1))}}, wanted);
  for (int k = 0; k < count; ++k)
    if (wanted[k]) c.set_GI(k, outs[k]);
}

// Split: Y_k = X[.., offset_k : offset_k + n_k, ..]  ⇒  dX = Concat(dY_0, dY_1, ...) along
// axis, with zeros of Y_k's shape for outputs that receive no gradient.
void split_grad(G& c) {
  const Node& n = c.node();
  std::string any;
  for (size_t k = 0; k < n.outputs.size() && any.empty(); ++k) any = c.GO(static_cast<int>(k));
  std::vector<std::string> parts;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const int i = static_cast<int>(k);
    if (!c.GO(i).empty()) {
      parts.push_back(c.GO(i));
      continue;
    }
    if (c.O(i).empty())
      throw Error(cat(n.describe(), ": output ", k, " is omitted, so the zero gradient of its ",
                      "slice has no shape"));
    parts.push_back(c.emit1("Expand", {c.scalar_like(0.0, any), c.shape_of(c.O(i))}));
  }
  c.set_GI(0, c.emit1("Concat", parts, {{"axis", G::attr_int(n.attr_int("axis", 0))}}));
}

// Slice: Y = X[starts : ends : steps] on axes  ⇒  dX = 0 with dY scattered into those positions
// (SliceGrad takes the forward's starts/ends/axes/steps, as inputs from opset 10 and as
// attributes before).
void slice_grad(G& c) {
  const Node& n = c.node();
  std::vector<std::string> ins = {c.GO(0), c.shape_of(c.I(0))};
  Attrs attrs;
  if (n.opset < 10) {
    attrs = copy_attrs(n, {"starts", "ends", "axes"});
  } else {
    for (int i = 1; i <= 4; ++i) ins.push_back(c.I(i));
  }
  c.set_GI(0, c.emit_grad_op("SliceGrad", trimmed(ins), attrs));
}

// Gather: Y[.., j, ..] = X[.., idx[j], ..]  ⇒  dX = 0; dX[.., idx[j], ..] += dY[.., j, ..]
void gather_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("GatherGrad", {c.GO(0), c.shape_of(c.I(0)), c.I(1)},
                             copy_attrs(c.node(), {"axis"})));
}

// Compress: Y[.., j, ..] = X[.., k_j, ..], k_j the j-th true entry of condition (along axis; on
// the flattened X without one). A Gather by those positions, so its adjoint scatters:
//   n = X's length along axis (numel(X) without one);  k = Reshape(NonZero(condition[:n]), [-1])
//   dX = GatherGrad(dY, shape(X), k, axis)   (no axis: GatherGrad(dY, [n], k, 0) reshaped to X)
// (entries of condition past n select nothing, as in the forward). condition gets none.
void compress_grad(G& c) {
  const std::string shape = c.shape_of(c.I(0));
  const Attribute* axis = c.node().attr("axis");
  const std::string n =
      axis ? c.emit1("Gather", {shape, ints_constant(c, {axis->i})}, {{"axis", G::attr_int(0)}})
           : c.emit1("Reshape", {c.emit1("Size", {c.I(0)}), ints_constant(c, {1})});
  const std::string cond = c.emit1("Slice", {c.I(1), ints_constant(c, {0}), n});
  const std::string k = c.emit1("Reshape", {c.emit1("NonZero", {cond}), ints_constant(c, {-1})});
  if (axis) {
    c.set_GI(0,
             c.emit_grad_op("GatherGrad", {c.GO(0), shape, k}, {{"axis", G::attr_int(axis->i)}}));
    return;
  }
  const std::string flat =
      c.emit_grad_op("GatherGrad", {c.GO(0), n, k}, {{"axis", G::attr_int(0)}});
  c.set_GI(0, c.emit1("Reshape", {flat, shape}));
}

// GatherElements: Y[p] = X[p with idx[p] on axis]  ⇒  dX = 0; dX[p with idx[p] on axis] += dY[p]
void gather_elements_grad(G& c) {
  c.set_GI(0, c.emit_grad_op("GatherElementsGrad", {c.GO(0), c.shape_of(c.I(0)), c.I(1)},
                             copy_attrs(c.node(), {"axis"})));
}

// The scatter-adds are linear in their first input (composite ScatterND/ScatterElements use them):
// GatherGrad: dX[.., idx[j], ..] += dY[.., j, ..]  ⇒  d(dY) = Gather(g, idx, axis)
void gather_grad_grad(G& c) {
  c.set_GI(0, c.emit1("Gather", {c.GO(0), c.I(2)}, copy_attrs(c.node(), {"axis"})));
}

// GatherElementsGrad: dX[p with idx[p] on axis] += dY[p]  ⇒  d(dY) = GatherElements(g, idx, axis)
void gather_elements_grad_grad(G& c) {
  c.set_GI(0, c.emit1("GatherElements", {c.GO(0), c.I(2)}, copy_attrs(c.node(), {"axis"})));
}

// ScatterReduce (ScatterElements/ScatterND with mul, max, min; data D, indices idx, updates U,
// Y = result, g = dY; ga(v) = GatherElements(v, idx, axis), sa(v) = the scatter-add
// GatherElementsGrad(v, shape(D), idx, axis), [c] = CastLike(c, D)):
//   max/min: the gradient is shared evenly among the elements equal to the result (as PyTorch's
//     scatter_reduce amax/amin with include_self): hitD = [D = Y], hitU = [U = ga(Y)],
//     share = g / max(hitD + sa(hitU), 1);  dD = share·hitD;  dU = ga(share)·hitU
//   mul: Y = D·P with P_j = Π_{p→j} U_p. With z = [U = 0], Z = sa(z) (zeros per target) and
//     N = ScatterReduce(1, idx, Where(z, 1, U), mul) (the product of the non-zero updates):
//     P = Where(Z > 0, 0, N);  dD = g·P;
//     dU_p = ga(g·D)_p · (ga(Z)_p − z_p > 0 ? 0 : ga(N)_p / Where(z, 1, U)_p)
//     (the product of the other updates, exact in the zeros; one division otherwise).
void scatter_reduce_grad(G& c) {
  const Node& n = c.node();
  if (c.GO(0).empty()) return;
  const std::string &d = c.I(0), &idx = c.I(1), &u = c.I(2), &y = c.O(0), &g = c.GO(0);
  const Attrs axis = copy_attrs(n, {"axis"});
  auto ga = [&](const std::string& v) { return c.emit1("GatherElements", {v, idx}, axis); };
  auto sa = [&](const std::string& v) {
    return c.emit_grad_op("GatherElementsGrad", {v, c.shape_of(d), idx}, axis);
  };
  auto as_d = [&](const std::string& b) { return c.emit1("CastLike", {b, d}); };
  const std::string zero = c.scalar_like(0.0, d), one = c.scalar_like(1.0, d);
  if (n.attr_string("reduction", "") != "mul") {
    const std::string hit_d = as_d(c.emit1("Equal", {d, y}));
    const std::string hit_u = as_d(c.emit1("Equal", {u, ga(y)}));
    const std::string count = c.emit1("Add", {hit_d, sa(hit_u)});
    const std::string share = c.emit1("Div", {g, c.emit1("Max", {count, one})});
    if (c.needs_GI(0)) c.set_GI(0, c.emit1("Mul", {share, hit_d}));
    if (c.needs_GI(2)) c.set_GI(2, c.emit1("Mul", {ga(share), hit_u}));
    return;
  }
  const std::string z = c.emit1("Equal", {u, zero});
  const std::string zeros = sa(as_d(z));
  const std::string u_nz = c.emit1("Where", {z, one, u});
  const std::string ones = c.emit1("Expand", {one, c.shape_of(d)});
  Attrs mul = axis;
  mul["reduction"] = n.attrs.at("reduction");
  const std::string nz = c.emit_grad_op("ScatterReduce", {ones, idx, u_nz}, mul);
  if (c.needs_GI(0)) {
    const std::string p = c.emit1("Where", {c.emit1("Greater", {zeros, zero}), zero, nz});
    c.set_GI(0, c.emit1("Mul", {g, p}));
  }
  if (c.needs_GI(2)) {
    const std::string others_zero =
        c.emit1("Greater", {c.emit1("Sub", {ga(zeros), as_d(z)}), zero});
    const std::string excl = c.emit1("Where", {others_zero, zero, c.emit1("Div", {ga(nz), u_nz})});
    c.set_GI(2, c.emit1("Mul", {ga(c.emit1("Mul", {g, d})), excl}));
  }
}

// Expand: Y = broadcast(X, shape)  ⇒  dX = sum_to(dY, X)
void expand_grad(G& c) { c.set_GI(0, c.sum_to_shape_of(c.GO(0), c.I(0))); }

// Tile: Y[i] = X[i mod shape(X)]  ⇒  dX[j] = Σ over tiles t of dY[t ⊙ shape(X) + j]
void tile_grad(G& c) { c.set_GI(0, c.emit_grad_op("TileGrad", {c.GO(0), c.shape_of(c.I(0))})); }

// Pad: Y[i] = X[src(i)] (or the constant)  ⇒  dX[j] = Σ_{i : src(i) = j} dY[i]. Constant mode is
// a crop of dY; reflect, edge and wrap add the border copies back onto their sources. The
// constant_value input gets no gradient.
void pad_grad(G& c) {
  const Node& n = c.node();
  Attrs attrs = copy_attrs(n, {"mode"});
  std::vector<std::string> ins = {c.GO(0), c.shape_of(c.I(0))};
  if (n.opset < 11) {
    attrs["pads"] = G::attr_ints(n.attr_ints(n.opset < 2 ? "paddings" : "pads"));
  } else {
    ins.push_back(c.I(1));
    ins.push_back(c.I(3));
  }
  c.set_GI(0, c.emit_grad_op("PadGrad", trimmed(ins), attrs));
}

// Cast, CastLike: Y = cast(X)  ⇒  dX = CastLike(dY, X) (the gradient in X's own dtype).
void cast_grad(G& c) { c.set_GI(0, c.emit1("CastLike", {c.GO(0), c.I(0)})); }

// Dropout, training:  Y = X ⊙ mask / (1 − ratio)  ⇒  dX = dY ⊙ mask / (1 − ratio)
//          inference: Y = X                       ⇒  dX = dY
// Training mode is input 2 from opset 12 (a runtime value: DropoutGrad reads it, and the ratio,
// as the forward does), and is_test == 0 before opset 7. In training the mask output must be
// requested (the trainer does): the gradient needs the same mask as the forward.
void dropout_grad(G& c) {
  const Node& n = c.node();
  const bool may_train =
      n.opset >= 12 ? !c.I(2).empty() : (n.opset < 7 && n.attr_int("is_test", 0) == 0);
  if (!may_train) {
    c.set_GI(0, c.GO(0));
    return;
  }
  if (c.O(1).empty())
    throw Error(cat(n.describe(),
                    ": Dropout in training mode needs its mask output for the "
                    "gradient (add a second output)"));
  Attrs attrs = {{"training", G::attr_int(1)}};
  std::vector<std::string> ins = {c.GO(0), c.O(1)};
  if (n.opset >= 12) {
    ins.push_back(c.I(1));
    ins.push_back(c.I(2));
  } else {
    attrs["ratio"] = G::attr_float(n.attr_float("ratio", 0.5f));
  }
  c.set_GI(0, c.emit_grad_op("DropoutGrad", trimmed(ins), attrs));
}

// DepthToSpace and SpaceToDepth (DCR) are each other's inverse, and both are permutations, so
//   DepthToSpace(DCR): dX = SpaceToDepth(dY, b)      SpaceToDepth: dX = DepthToSpace(dY, b, DCR)
// CRD has no ONNX inverse. With X viewed as [N, C', b_i, b_j, H, W] and Y as
// [N, C', H, b_i, W, b_j], Y = transpose(X, [0, 1, 4, 2, 5, 3]); dX undoes it in steps that need
// no runtime shape arithmetic:
//   dY [N, C', Hb, Wb] → reshape [N, C', Hb, W, b_j] → transpose → [N, C', b_j, W, Hb]
//   → reshape [N, C', b_j, W, H, b_i] → transpose → [N, C', b_i, b_j, H, W] → reshape to X.
void depth_to_space_grad(G& c) {
  const Node& n = c.node();
  const int64_t b = n.attr_int("blocksize", 0);
  if (n.attr_string("mode", "DCR") != "CRD") {
    c.set_GI(0, c.emit1("SpaceToDepth", {c.GO(0)}, {{"blocksize", G::attr_int(b)}}));
    return;
  }
  std::string t = c.emit1("Reshape", {c.GO(0), ints_constant(c, {0, 0, 0, -1, b})});
  t = c.emit1("Transpose", {t}, {{"perm", G::attr_ints({0, 1, 4, 3, 2})}});
  t = c.emit1("Reshape", {t, ints_constant(c, {0, 0, 0, 0, -1, b})});
  t = c.emit1("Transpose", {t}, {{"perm", G::attr_ints({0, 1, 5, 2, 4, 3})}});
  c.set_GI(0, reshape_to(c, t, c.I(0)));
}

void space_to_depth_grad(G& c) {
  Attrs attrs = copy_attrs(c.node(), {"blocksize"});
  Attribute dcr;
  dcr.kind = Attribute::Kind::String;
  dcr.s = "DCR";
  attrs["mode"] = dcr;
  c.set_GI(0, c.emit1("DepthToSpace", {c.GO(0)}, attrs));
}

// Trilu: Y = X ⊙ M (M the 0/1 triangle mask of k and upper), so dX = dY ⊙ M = Trilu(dY, k).
void trilu_grad(G& c) {
  std::vector<std::string> in = {c.GO(0)};
  if (!c.I(1).empty()) in.push_back(c.I(1));
  c.set_GI(0, c.emit1("Trilu", in, copy_attrs(c.node(), {"upper"})));
}

}  // namespace

void register_shape_gradients(GradientRegistry& r) {
  r.add(OpId::Reshape, {reshape_grad, {1}});
  r.add(OpId::Flatten, {reshape_grad, {}});
  r.add(OpId::Squeeze, {reshape_grad, {1}});
  r.add(OpId::Unsqueeze, {reshape_grad, {1}});
  r.add(OpId::Identity, {identity_grad, {}});
  r.add(OpId::Transpose, {transpose_grad, {}});
  r.add(OpId::Concat, {concat_grad, {}});
  r.add(OpId::Split, {split_grad, {1}});
  r.add(OpId::Slice, {slice_grad, {1, 2, 3, 4}});
  r.add(OpId::Gather, {gather_grad, {1}});
  r.add(OpId::Compress, {compress_grad, {1}});
  r.add(OpId::GatherElements, {gather_elements_grad, {1}});
  r.add(OpId::GatherGrad, {gather_grad_grad, {1, 2}});
  r.add(OpId::GatherElementsGrad, {gather_elements_grad_grad, {1, 2}});
  r.add(OpId::ScatterReduce, {scatter_reduce_grad, {1}});
  r.add(OpId::Expand, {expand_grad, {1}});
  r.add(OpId::Tile, {tile_grad, {1, 2}});
  r.add(OpId::Pad, {pad_grad, {1, 2, 3}});
  r.add(OpId::Cast, {cast_grad, {}});
  r.add(OpId::CastLike, {cast_grad, {1}});
  r.add(OpId::Dropout, {dropout_grad, {1, 2}});
  r.add(OpId::DepthToSpace, {depth_to_space_grad, {}});
  r.add(OpId::SpaceToDepth, {space_to_depth_grad, {}});
  r.add(OpId::Trilu, {trilu_grad, {1}});
  // Outputs that carry no gradient: shapes and sizes, indices, comparisons and logic (integers and
  // booleans), generators from shapes, and the piecewise-constant roundings and Hardmax
  // (derivative 0 almost everywhere, as in PyTorch). Every input is non-differentiable, so a path
  // through one of them (x.shape[1] cast to float and used as a divisor, a mask from x > 0) adds
  // nothing to the gradient instead of stopping the backward pass.
  for (OpId op : {OpId::Shape,   OpId::Size,        OpId::ArgMax,
                  OpId::ArgMin,  OpId::Equal,       OpId::Less,
                  OpId::Greater, OpId::LessOrEqual, OpId::GreaterOrEqual,
                  OpId::Not,     OpId::And,         OpId::Or,
                  OpId::Xor,     OpId::IsNaN,       OpId::IsInf,
                  OpId::Floor,   OpId::Ceil,        OpId::Round,
                  OpId::Sign,    OpId::Hardmax,     OpId::ConstantOfShape,
                  OpId::Range})
    r.add(op, {nullptr, {0, 1, 2}});
  // Detection and integer ops (inference only): integer outputs, no gradient through them, as
  // ArgMax (a Gather of the boxes by NonMaxSuppression's indices trains through Gather's data).
  r.add(OpId::NonMaxSuppression, {nullptr, {0, 1, 2, 3, 4}});
  r.add(OpId::BitShift, {nullptr, {0, 1}});
  r.add(OpId::NonZero, {nullptr, {0}});
  r.add(OpId::TfIdfVectorizer, {nullptr, {0}});  // integer token ids in
  // Random generators: their outputs are constants for the step (drawn in the forward pass).
  // The *Like ops read only their input's shape and Bernoulli's probabilities get no gradient
  // (as torch.bernoulli); a VAE's z = mu + sigma * eps trains mu and sigma through Mul and Add.
  for (OpId op : {OpId::RandomNormal, OpId::RandomUniform, OpId::RandomNormalLike,
                  OpId::RandomUniformLike, OpId::Bernoulli, OpId::Multinomial})
    r.add(op, {nullptr, {0}});
  // Signal generators (opset 17): windows and mel filters from integer sizes and scalar band
  // edges, nothing to differentiate (a window or mel matrix is a constant of the graph). DFT and
  // STFT train through their adjoints (grads/signal.cc).
  for (OpId op : {OpId::HannWindow, OpId::HammingWindow, OpId::BlackmanWindow})
    r.add(op, {nullptr, {0}});
  r.add(OpId::MelWeightMatrix, {nullptr, {0, 1, 2, 3, 4}});
}

}  // namespace oat::train
