// Normalisations that run as expansions (runtime/composite.h): LRN, MeanVarianceNormalization and
// GroupNormalization (at the end of the file).
//
// LRN (opset 1, 13), X = (N, C, D1, ..., Dk), size required, alpha 1e-4, beta 0.75, bias 1:
//   square_sum[n, c, d] = Σ_{i = max(0, c − ⌊(size−1)/2⌋)}^{min(C−1, c + ⌈(size−1)/2⌉)} X[n, i, d]²
//   Y = X · (bias + alpha/size · square_sum)^(−beta)
// The window sum over channels is a 2-D AveragePool: X² unsqueezed and reshaped to
// (N, 1, C, D1·…·Dk), zero-padded ⌊(size−1)/2⌋ before and ⌈(size−1)/2⌉ after on the C axis, then a
// (size, 1) window gives square_sum / size.
//
// MeanVarianceNormalization (opset 9, 13), axes default [0, 2, 3] (ONNX's function body):
//   mean = ReduceMean(X, axes),  var = max(ReduceMean(X², axes) − mean², 0)
//   Y = (X − mean) / (√var + 1e-9)
#include <cmath>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"

namespace oat::composite {

namespace {

// X's type (F32 when nothing says), and a scalar constant of it.
DType data_type(const Expansion& e) {
  const DType t = e.dtype(e.input(0));
  return t == DType::Undefined ? DType::F32 : t;
}

std::string scalar(Expansion& e, double v, const std::string& tag) {
  return e.constant_tensor(cast_tensor(Tensor::scalar<double>(v), data_type(e)), tag);
}

// X's rank from its value_info; fails when it is unknown.
size_t known_rank(const Expansion& e, const char* why) {
  const ValueInfo* vi = e.info(e.input(0));
  if (!vi || !vi->shape)
    e.fail(cat("the rank of X '", e.input(0), "' must be known (", why, ")"));
  return vi->shape->size();
}

}  // namespace

void expand_lrn(Expansion& e) {
  const Node& n = e.node();
  if (!n.has_attr("size")) e.fail("the size attribute is required");
  const int64_t size = n.attr_int("size", 0);
  if (size < 1) e.fail(cat("size must be at least 1, got ", size));
  const float alpha = n.attr_float("alpha", 1e-4f);
  const float beta = n.attr_float("beta", 0.75f);
  const float bias = n.attr_float("bias", 1.0f);
  const size_t rank = known_rank(e, "the channel window is a pool over one axis of X");
  if (rank < 3) e.fail(cat("X must be (N, C, D1, ...), got rank ", rank));
  const DType t = data_type(e);
  const std::string& x = e.input(0);

  const std::string sq = e.add1("Mul", {x, x}, "square");
  e.set_info(sq, t, e.info(x)->shape);
  // (N, C, D1, ..., Dk) -> (N, 1, C, D1, ..., Dk) -> (N, 1, C, D1·…·Dk): Reshape's 0 copies the
  // dimension at the same index, -1 takes the rest.
  const std::string u1 = e.add1("Unsqueeze", {sq, e.ints({1}, "axis1")}, "unsqueeze");
  e.set_info(u1, t);
  const std::string u = e.add1("Reshape", {u1, e.ints({0, 0, 0, -1}, "pool_shape")}, "as_planes");
  e.set_info(u, t);
  // Zeros ⌊(size−1)/2⌋ before and ⌈(size−1)/2⌉ after on the C axis (a Pad rather than the pool's
  // own pads: cuDNN pools pad symmetrically only, and even sizes need asymmetric ones).
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const std::string padded =
      e.add1("Pad", {u, e.ints({0, 0, before, 0, 0, 0, after, 0}, "pads")}, "pad_channels");
  e.set_info(padded, t);
  const std::string avg = e.add1("AveragePool", {padded}, "window_mean",
                                 {{"kernel_shape", ints_attribute({size, 1})}});
  e.set_info(avg, t);
  const std::string x_shape = e.add1("Shape", {x}, "x_shape");
  e.set_info(x_shape, DType::I64);
  const std::string s = e.add1("Reshape", {avg, x_shape}, "window_mean_x");
  e.set_info(s, t, e.info(x)->shape);
  // alpha/size · square_sum = alpha · window mean
  const std::string scaled = e.add1("Mul", {s, scalar(e, alpha, "alpha")}, "scaled");
  e.set_info(scaled, t, e.info(x)->shape);
  const std::string base = e.add1("Add", {scaled, scalar(e, bias, "bias")}, "base");
  e.set_info(base, t, e.info(x)->shape);
  const std::string factor = e.add1("Pow", {base, scalar(e, -beta, "neg_beta")}, "factor");
  e.set_info(factor, t, e.info(x)->shape);
  e.add_to("Mul", {x, factor}, {e.output(0)}, "lrn");
}

void expand_mean_variance_normalization(Expansion& e) {
  const Node& n = e.node();
  const std::vector<int64_t> axes = n.attr_ints("axes", {0, 2, 3});
  const DType t = data_type(e);
  const std::string& x = e.input(0);
  const ValueInfo* xi = e.info(x);
  const auto shape = xi ? xi->shape : std::nullopt;
  if (shape)
    for (int64_t a : axes)
      if (a < -static_cast<int64_t>(shape->size()) || a >= static_cast<int64_t>(shape->size()))
        e.fail(cat("axis ", a, " is out of range for X of rank ", shape->size()));
  auto mean_of = [&](const std::string& v, const std::string& tag) {
    std::string m = e.add1("ReduceMean", {v}, tag,
                           {{"axes", ints_attribute(axes)}, {"keepdims", int_attribute(1)}});
    e.set_info(m, t);
    return m;
  };
  const std::string mean = mean_of(x, "mean");
  const std::string sq = e.add1("Mul", {x, x}, "square");
  e.set_info(sq, t, shape);
  const std::string mean_sq = mean_of(sq, "mean_of_square");
  const std::string sq_mean = e.add1("Mul", {mean, mean}, "square_of_mean");
  e.set_info(sq_mean, t);
  const std::string diff = e.add1("Sub", {mean_sq, sq_mean}, "variance_raw");
  e.set_info(diff, t);
  // Rounding can make E[X²] − mean² slightly negative for a constant slice: clamp at 0 (ONNX's
  // body would give √(negative) = NaN there).
  const std::string var = e.add1("Relu", {diff}, "variance");
  e.set_info(var, t);
  const std::string sd = e.add1("Sqrt", {var}, "std");
  e.set_info(sd, t);
  const std::string den = e.add1("Add", {sd, scalar(e, 1e-9, "epsilon")}, "std_eps");
  e.set_info(den, t);
  const std::string centred = e.add1("Sub", {x, mean}, "centred");
  e.set_info(centred, t, shape);
  e.add_to("Div", {centred, den}, {e.output(0)}, "mvn");
}

}  // namespace oat::composite

namespace oat::composite {

// GroupNormalization (opset 18; opset 21 moved scale and bias to one per channel), X = (N, C, D...),
// num_groups G required, epsilon 1e-5. With X viewed as (N, G, C/G · D1·…·Dk):
//   mean = ReduceMean(X, 2),  var = ReduceMean((X − mean)², 2)  (two passes: no cancellation)
//   X̂ = (X − mean) / √(var + epsilon)
//   opset 18: Y = X̂ · scale[g] + bias[g] in the grouped view (scale, bias: [G])
//   opset 21: Y = X̂ · scale[c] + bias[c] in X's shape     (scale, bias: [C]; stash_type, the
//             statistics' precision, is FP32 by default and the op is deny-listed, so mixed
//             precision computes it in FP32 anyway)
void expand_group_normalization(Expansion& e) {
  const Node& n = e.node();
  if (!n.has_attr("num_groups")) e.fail("the num_groups attribute is required");
  const int64_t groups = n.attr_int("num_groups", 0);
  if (groups < 1) e.fail(cat("num_groups must be at least 1, got ", groups));
  const float eps = n.attr_float("epsilon", 1e-5f);
  const size_t rank = known_rank(e, "scale and bias broadcast over its spatial dims");
  if (rank < 2) e.fail(cat("X must be (N, C, D...), got rank ", rank));
  const ValueInfo* xi = e.info(e.input(0));
  const Dim& c = (*xi->shape)[1];
  if (c.fixed() && c.value % groups != 0)
    e.fail(cat("the ", c.value, " channels of X do not split into ", groups, " groups"));
  const bool per_channel = n.opset >= 21;
  const int64_t want = per_channel ? c.value : groups;
  for (size_t i = 1; i <= 2; ++i) {
    const ValueInfo* vi = e.info(e.input(i));
    const Tensor* k = e.constant(e.input(i));
    const int64_t len = k ? k->numel()
                          : (vi && vi->shape && vi->shape->size() == 1 && (*vi->shape)[0].fixed()
                                 ? (*vi->shape)[0].value
                                 : -1);
    if (len >= 0 && want >= 0 && len != want)
      e.fail(cat(i == 1 ? "scale" : "bias", " has ", len, " elements, expected ", want, " (one per ",
                 per_channel ? "channel, opset 21" : "group, opset 18", ")"));
  }
  const DType t = data_type(e);
  const std::string& x = e.input(0);
  auto info = [&](const std::string& v) {
    e.set_info(v, t);
    return v;
  };
  const std::string grouped =
      info(e.add1("Reshape", {x, e.ints({0, groups, -1}, "grouped_shape")}, "grouped"));
  auto mean_of = [&](const std::string& v, const std::string& tag) {
    return info(e.add1("ReduceMean", {v}, tag,
                       {{"axes", ints_attribute({2})}, {"keepdims", int_attribute(1)}}));
  };
  const std::string mean = mean_of(grouped, "mean");
  const std::string centred = info(e.add1("Sub", {grouped, mean}, "centred"));
  const std::string sq = info(e.add1("Mul", {centred, centred}, "square"));
  const std::string var = mean_of(sq, "variance");
  const std::string var_eps = info(e.add1("Add", {var, scalar(e, eps, "epsilon")}, "variance_eps"));
  const std::string sd = info(e.add1("Sqrt", {var_eps}, "std"));
  const std::string normed = info(e.add1("Div", {centred, sd}, "normalized"));
  const std::string x_shape = e.add1("Shape", {x}, "x_shape");
  e.set_info(x_shape, DType::I64);
  if (!per_channel) {
    // scale, bias [G] -> [G, 1] against the grouped view (N, G, L).
    const std::string g1 = e.ints({groups, 1}, "group_column");
    const std::string s = info(e.add1("Reshape", {e.input(1), g1}, "scale_column"));
    const std::string b = info(e.add1("Reshape", {e.input(2), g1}, "bias_column"));
    const std::string scaled = info(e.add1("Mul", {normed, s}, "scaled"));
    const std::string shifted = info(e.add1("Add", {scaled, b}, "shifted"));
    e.add_to("Reshape", {shifted, x_shape}, {e.output(0)}, "group_norm");
    return;
  }
  // scale, bias [C] -> [C, 1, ..., 1] against X's shape.
  std::vector<int64_t> column(rank - 1, 1);
  column[0] = -1;
  const std::string cshape = e.ints(column, "channel_column");
  const std::string back = info(e.add1("Reshape", {normed, x_shape}, "normalized_x"));
  const std::string s = info(e.add1("Reshape", {e.input(1), cshape}, "scale_column"));
  const std::string b = info(e.add1("Reshape", {e.input(2), cshape}, "bias_column"));
  const std::string scaled = info(e.add1("Mul", {back, s}, "scaled"));
  e.add_to("Add", {scaled, b}, {e.output(0)}, "group_norm");
}

}  // namespace oat::composite
