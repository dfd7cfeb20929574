// Index-driven ops that run as expansions (runtime/composite.h): OneHot, EyeLike, GatherND,
// ScatterElements, Scatter, ScatterND and ReverseSequence. Index arithmetic is int64 (on the CUDA
// backend it stays on the host when the indices come from the host); data moves through Gather,
// GatherElements and the scatter-adds GatherGrad / GatherElementsGrad, whose gradients are the
// gathers again (train/autodiff/grads/shape.cc).
//
// OneHot (opsets 9, 11): indices of any numeric type (cast to int64, truncating), depth a scalar
// or 1-element tensor of any numeric type, values = [off, on], axis default -1:
//   i' = i < 0 ? i + depth : i                (entries outside [-depth, depth) match nothing)
//   hot = Equal(Unsqueeze(i', axis), Range(0, depth) on axis)
//   Y = Gather(values, Cast(hot, int64))      (values[0] = off, values[1] = on; Y has values' type)
//
// EyeLike (opset 9): X 2-D [rows, cols], k default 0, dtype default X's type:
//   Y[i, j] = (i + k == j)   as Cast(Equal(Unsqueeze(Range(rows), 1) + k, Unsqueeze(Range(cols),
//   0)))
//
// GatherND (opsets 11, 12, 13; batch_dims b from 12): data [d0, ..., d_{r-1}], indices
// [i0, ..., i_{q-2}, k] with i0..i_{b-1} = d0..d_{b-1}. With P = d_b·…·d_{b+k-1} and the row-major
// strides s_j = d_{b+j+1}·…·d_{b+k-1} of the indexed dims,
//   flat = Reshape(data, [d0·…·d_{b-1}·P, d_{b+k}, ..., d_{r-1}])
//   lin[p] = batch(p)·P + Σ_j idx'[p, j]·s_j,   idx' = idx < 0 ? idx + d_{b+j} : idx
//   Y = Gather(flat, lin, axis 0)            shape indices.shape[:-1] + data.shape[b+k:]
// where batch(p) is the linear index of p's first b coordinates. Needs the rank of indices, its
// last dim k and data's first b + k dims fixed in value_info; the other dims may be symbolic. A
// tuple with a component outside [-d, d) gets lin = −(B·P) − 1, so Gather refuses it (as it
// refuses a lin out of range) instead of reading another row.
//
// ScatterElements (opsets 11, 13, 16, 18) and Scatter (opsets 9, 11; as ScatterElements with
// reduction none), axis default 0, with sa(u) = GatherElementsGrad(u, shape(data), indices, axis),
// the scatter-add into zeros (sa(u)[.., idx[p], ..] += u[p]):
//   reduction add:  Y = data + sa(updates)
//   reduction none: Y = Where(sa(ones) > 0, sa(updates), data)
//   reduction mul, max, min: Y = ScatterReduce(data, indices, updates, axis, reduction)
// ONNX leaves duplicate indices undefined for none: here duplicates add their updates (ONNX
// Runtime keeps the last). Float data only (the scatter kernels are float-only).
//
// ScatterND (opsets 11, 13, 16, 18): data [d0, ..., d_{r-1}], indices [..., k], updates
// indices.shape[:-1] + data.shape[k:]; flat and lin as GatherND's with b = 0, and
// sa(u) = Reshape(GatherGrad(u, shape(flat), lin, axis 0), shape(data)):
//   add:  Y = data + sa(updates);   none: Y = Where(sa(ones) > 0, sa(updates), data)
//   mul, max, min: ScatterReduce on the flat form (expand_scatter_nd_reduce)
// (duplicates as ScatterElements).
//
// ReverseSequence (opset 10): X [T, B, ...] (time_axis 0, batch_axis 1) or [B, T, ...] (1, 0),
// sequence_lens [B] int64 (int32 accepted):
//   idx[t, b] = t < len[b] ? len[b] − 1 − t : t     (the involution RNN's reverse direction uses)
//   Y = GatherElements(X, Expand(idx laid out on the time and batch axes, shape(X)), time_axis)
// Needs X's rank; T and B may be symbolic.
#include <limits>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"

namespace oat::composite {

namespace {

using Dims = std::vector<Dim>;

// What is known of a value's shape: an initializer's, or the value_info's (nullopt: unknown).
std::optional<Dims> shape_of(const Expansion& e, const std::string& v) {
  if (const Tensor* t = e.constant(v)) {
    Dims d;
    for (int64_t s : t->shape()) d.push_back(Dim{s, ""});
    return d;
  }
  if (const ValueInfo* vi = e.info(v)) return vi->shape;
  return std::nullopt;
}

std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += cat(i ? ", " : "",
             d[i].fixed() ? std::to_string(d[i].value) : (d[i].param.empty() ? "?" : d[i].param));
  return s + "]";
}

// The shape of input `i` (named `what`), failing when its rank is unknown.
Dims known_shape(const Expansion& e, size_t i, const char* what, const char* why) {
  auto s = shape_of(e, e.input(i));
  if (!s) e.fail(cat("the rank of ", what, " '", e.input(i), "' must be known (", why, ")"));
  return *s;
}

// A node with one output of type t (Undefined: not recorded).
std::string op(Expansion& e, const std::string& type, const std::vector<std::string>& in,
               const std::string& tag, DType t, std::map<std::string, Attribute> attrs = {}) {
  std::string v = e.add1(type, in, tag, std::move(attrs));
  if (t != DType::Undefined) e.set_info(v, t);
  return v;
}

// x as int64 (a Cast unless it is already).
std::string as_i64(Expansion& e, const std::string& x, const std::string& tag) {
  if (e.dtype(x) == DType::I64) return x;
  return op(e, "Cast", {x}, tag, DType::I64, {{"to", int_attribute(7)}});
}

// Slice(Shape(x), [begin], [end]): some of x's dims as an int64 vector.
std::string dims_of(Expansion& e, const std::string& x, int64_t begin, int64_t end,
                    const std::string& tag) {
  const std::string s = op(e, "Shape", {x}, tag + "_shape", DType::I64);
  return op(e, "Slice", {s, e.ints({begin}, tag + "_begin"), e.ints({end}, tag + "_end")}, tag,
            DType::I64);
}

// Shape(x)[axis] as an int64 scalar.
std::string dim_scalar(Expansion& e, const std::string& x, int64_t axis, const std::string& tag) {
  const std::string s = op(e, "Shape", {x}, tag + "_shape", DType::I64);
  return op(e, "Gather", {s, e.ints({axis}, tag + "_axis", true)}, tag, DType::I64);
}

// i < 0 ? i + n : i  (n an int64 scalar or broadcastable vector).
std::string wrap_negative(Expansion& e, const std::string& i, const std::string& n,
                          const std::string& tag) {
  const std::string neg =
      op(e, "Less", {i, e.ints({0}, tag + "_zero", true)}, tag + "_negative", DType::Bool);
  const std::string up = op(e, "Add", {i, n}, tag + "_plus_n", DType::I64);
  return op(e, "Where", {neg, up, i}, tag, DType::I64);
}

// The scatters' reduction attribute: "none" (Scatter's only), "add", or one of ScatterReduce's
// "mul", "max", "min"; fails otherwise.
std::string scatter_reduction(Expansion& e) {
  if (e.node().op_type == "Scatter") return "none";
  const std::string r = e.node().attr_string("reduction", "none");
  if (r == "none" || r == "add" || r == "mul" || r == "max" || r == "min") return r;
  e.fail(cat("unknown reduction '", r, "' (none, add, mul, max or min)"));
}

// The scatters' data must be a float type (the scatter-add kernels are float-only).
DType scatter_type(Expansion& e) {
  const DType t = e.dtype(e.input(0));
  if (t == DType::Undefined) return DType::Undefined;
  if (!is_floating(t))
    e.unsupported(
        cat("data '", e.input(0), "' is ", dtype_name(t), "; only float data is supported"),
        dtype_name(t));
  return t;
}

// Where(sa(ones) > 0, sa(updates), data), or data + sa(updates): the scatter's result written to
// the composite's output. `sa` adds the scatter-add of a value shaped like updates.
template <class ScatterAdd>
void finish_scatter(Expansion& e, bool add, DType t, ScatterAdd sa) {
  const std::string& data = e.input(0);
  const std::string& updates = e.input(2);
  const std::string s = sa(updates, "scatter_updates");
  if (add) {
    e.add_to("Add", {data, s}, {e.output(0)}, "scatter_add");
    return;
  }
  const DType vt = t == DType::Undefined ? DType::F32 : t;
  Attribute one;
  one.kind = Attribute::Kind::Tensor;
  one.t = cast_tensor(Tensor::from_vector<float>({1}, {1.0f}), vt);
  const std::string us = op(e, "Shape", {updates}, "updates_shape", DType::I64);
  const std::string ones = op(e, "ConstantOfShape", {us}, "ones", t, {{"value", one}});
  const std::string count = sa(ones, "written");
  const std::string zero = e.constant_tensor(cast_tensor(Tensor::scalar<float>(0.0f), vt), "zero");
  const std::string mask = op(e, "Greater", {count, zero}, "written_mask", DType::Bool);
  e.add_to("Where", {mask, s, data}, {e.output(0)}, "scatter");
}

// GatherND/ScatterND's flattened form: data reshaped to [B·P, tail...] and the linear row index of
// every index tuple (shape indices.shape[:-1]).
struct Flat {
  std::string data, lin;
  int64_t data_rank = 0, indices_rank = 0, k = 0;  // r, q and the index length
};

Flat flatten_nd(Expansion& e, int64_t b) {
  const std::string& data = e.input(0);
  const std::string& indices = e.input(1);
  const Dims ds = known_shape(e, 0, "data", "the indexed dims set the strides");
  const Dims is = known_shape(e, 1, "indices", "its last dim is the index length");
  const int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  if (q < 1) e.fail(cat("indices '", indices, "' must have rank at least 1, got a scalar"));
  if (b < 0 || b >= std::min(r, q))
    e.fail(cat("batch_dims ", b, " must be in [0, min(rank(data), rank(indices))) = [0, ",
               std::min(r, q), ")"));
  if (!is.back().fixed())
    e.fail(cat("the last dim of indices '", indices, "' ", dims_str(is), " must be fixed"));
  const int64_t k = is.back().value;
  if (k < 1)
    e.unsupported(
        cat("indices '", indices, "' ", dims_str(is), " select whole slices (last dim 0)"), "k=0");
  if (b + k > r)
    e.fail(cat("indices '", indices, "' ", dims_str(is), " index ", k, " dims after ", b,
               " batch dims of data '", data, "' ", dims_str(ds), " (rank ", r, ")"));
  std::vector<int64_t> d(static_cast<size_t>(b + k));
  for (int64_t j = 0; j < b + k; ++j) {
    if (!ds[j].fixed())
      e.fail(cat("dim ", j, " of data '", data, "' ", dims_str(ds),
                 " must be fixed (the batch and indexed dims set the strides)"));
    d[j] = ds[j].value;
  }
  int64_t P = 1, B = 1;
  for (int64_t j = b; j < b + k; ++j) P *= d[j];
  for (int64_t j = 0; j < b; ++j) B *= d[j];

  Flat f;
  f.data_rank = r;
  f.indices_rank = q;
  f.k = k;
  // flat = Reshape(data, Concat([B·P], shape(data)[b+k:]))
  const std::string tail = dims_of(e, data, b + k, std::numeric_limits<int64_t>::max(), "tail");
  const std::string fshape = op(e, "Concat", {e.ints({B * P}, "rows"), tail}, "flat_shape",
                                DType::I64, {{"axis", int_attribute(0)}});
  f.data = op(e, "Reshape", {data, fshape}, "flat", e.dtype(data));
  // lin = Σ_j idx'[..., j]·s_j (+ batch·P)
  const std::string idx = as_i64(e, indices, "indices_i64");
  int64_t stride = 1;
  std::vector<int64_t> strides(static_cast<size_t>(k));
  for (int64_t j = k - 1; j >= 0; --j) strides[j] = stride, stride *= d[b + j];
  std::string lin, bad;
  for (int64_t j = 0; j < k; ++j) {
    const std::string tag = cat("index", j);
    std::string c = op(e, "Gather", {idx, e.ints({j}, tag + "_at", true)}, tag, DType::I64,
                       {{"axis", int_attribute(-1)}});
    const std::string size = e.ints({d[b + j]}, tag + "_size", true);
    c = wrap_negative(e, c, size, tag + "_wrapped");
    // Outside [0, d) after wrapping: the tuple is out of range.
    const std::string below =
        op(e, "Less", {c, e.ints({0}, tag + "_zero", true)}, tag + "_below", DType::Bool);
    const std::string above = op(e, "GreaterOrEqual", {c, size}, tag + "_above", DType::Bool);
    const std::string out = op(e, "Or", {below, above}, tag + "_out", DType::Bool);
    bad = bad.empty() ? out : op(e, "Or", {bad, out}, tag + "_any_out", DType::Bool);
    if (strides[j] != 1)
      c = op(e, "Mul", {c, e.ints({strides[j]}, tag + "_stride", true)}, tag + "_scaled",
             DType::I64);
    lin = lin.empty() ? c : op(e, "Add", {lin, c}, cat("linear", j), DType::I64);
  }
  if (b > 0) {
    // batch(p)·P as a constant of shape [d0, ..., d_{b-1}, 1, ...] (q − 1 − b ones).
    Shape bs(d.begin(), d.begin() + b);
    for (int64_t j = b; j < q - 1; ++j) bs.push_back(1);
    std::vector<int64_t> v(static_cast<size_t>(B));
    for (int64_t i = 0; i < B; ++i) v[i] = i * P;
    const std::string off = e.constant_tensor(Tensor::from_vector<int64_t>(bs, v), "batch_offset");
    lin = op(e, "Add", {lin, off}, "linear", DType::I64);
  }
  // A tuple with a component out of range reads row −(B·P) − 1, which Gather / GatherGrad refuse
  // with an out-of-range error (without this, e.g. [0, 5] into [3, 4] would read row 1's first
  // element).
  f.lin = op(e, "Where", {bad, e.ints({-(B * P) - 1}, "out_of_range", true), lin},
             "linear_checked", DType::I64);
  return f;
}

}  // namespace

void expand_one_hot(Expansion& e) {
  const std::string& indices = e.input(0);
  const std::string& depth = e.input(1);
  const std::string& values = e.input(2);
  if (indices.empty() || depth.empty() || values.empty())
    e.fail("needs the inputs indices, depth and values");
  const int64_t axis = e.node().attr_int("axis", -1);
  // depth as an int64 scalar (a scalar or a 1-element tensor of any numeric type).
  const std::string d1 = as_i64(e, depth, "depth_i64");
  const std::string d = op(e, "Reshape", {d1, e.ints({}, "scalar_shape")}, "depth", DType::I64);
  const std::string range = op(e, "Range", {e.ints({0}, "zero", true), d, e.ints({1}, "one", true)},
                               "classes", DType::I64);
  const std::string i = wrap_negative(e, as_i64(e, indices, "indices_i64"), d, "indices_wrapped");
  std::string cls = range;  // [depth], laid out on the output's axis
  if (axis != -1) {
    const Dims is = known_shape(e, 0, "indices", "axis is not -1");
    const int64_t r = static_cast<int64_t>(is.size()) + 1;
    if (axis < -r || axis >= r)
      e.fail(cat("axis ", axis, " is out of range for an output of rank ", r));
    const int64_t a = axis < 0 ? axis + r : axis;
    if (a != r - 1) {
      std::vector<int64_t> trailing;
      for (int64_t j = 1; j < r - a; ++j) trailing.push_back(j);
      cls = op(e, "Unsqueeze", {range, e.ints(trailing, "class_axes")}, "classes_on_axis",
               DType::I64);
    }
  }
  const std::string iu =
      op(e, "Unsqueeze", {i, e.ints({axis}, "axis")}, "indices_on_axis", DType::I64);
  const std::string hot = op(e, "Equal", {iu, cls}, "hot", DType::Bool);
  const std::string pick =
      op(e, "Cast", {hot}, "pick", DType::I64, {{"to", int_attribute(7)}});
  e.add_to("Gather", {values, pick}, {e.output(0)}, "one_hot", {{"axis", int_attribute(0)}});
}

void expand_eye_like(Expansion& e) {
  const std::string& x = e.input(0);
  if (auto s = shape_of(e, x); s && s->size() != 2)
    e.fail(cat("X '", x, "' must be 2-D, got ", dims_str(*s)));
  const int64_t k = e.node().attr_int("k", 0);
  const std::string zero = e.ints({0}, "zero", true), one = e.ints({1}, "one", true);
  const std::string rows =
      op(e, "Range", {zero, dim_scalar(e, x, 0, "rows"), one}, "row", DType::I64);
  const std::string cols =
      op(e, "Range", {zero, dim_scalar(e, x, 1, "cols"), one}, "col", DType::I64);
  std::string r = op(e, "Unsqueeze", {rows, e.ints({1}, "row_axes")}, "row_column", DType::I64);
  if (k != 0) r = op(e, "Add", {r, e.ints({k}, "k", true)}, "row_plus_k", DType::I64);
  const std::string c = op(e, "Unsqueeze", {cols, e.ints({0}, "col_axes")}, "col_row", DType::I64);
  const std::string eye = op(e, "Equal", {r, c}, "diagonal", DType::Bool);
  if (const Attribute* dt = e.node().attr("dtype"))
    e.add_to("Cast", {eye}, {e.output(0)}, "eye", {{"to", *dt}});
  else
    e.add_to("CastLike", {eye, x}, {e.output(0)}, "eye");
}

void expand_gather_nd(Expansion& e) {
  const int64_t b = e.node().attr_int("batch_dims", 0);
  const Flat f = flatten_nd(e, b);
  e.add_to("Gather", {f.data, f.lin}, {e.output(0)}, "gather", {{"axis", int_attribute(0)}});
}

// ONNX: updates.shape = indices.shape[:-1] + data.shape[k:]. Checked here where the shapes are
// known (rank, and each dim fixed on both sides); at run time GatherGrad (none, add) or the flat
// Reshape and ScatterReduce (mul, max, min) refuse what the shapes did not settle.
void check_scatter_nd_updates(Expansion& e, const Flat& f) {
  const std::optional<Dims> us = shape_of(e, e.input(2));
  if (!us) return;
  Dims want = known_shape(e, 1, "indices", "its last dim is the index length");
  want.pop_back();
  const Dims ds = known_shape(e, 0, "data", "the indexed dims set the strides");
  want.insert(want.end(), ds.begin() + f.k, ds.end());
  bool ok = us->size() == want.size();
  for (size_t j = 0; ok && j < want.size(); ++j)
    ok = !(*us)[j].fixed() || !want[j].fixed() || (*us)[j].value == want[j].value;
  if (!ok)
    e.fail(cat("updates '", e.input(2), "' ", dims_str(*us),
               " must have shape indices.shape[:-1] + data.shape[k:] = ", dims_str(want)));
}

// ScatterND with mul/max/min on the flat form, as ScatterReduce along axis 0: with
// t = rank(data) − k tail dims and N update rows,
//   rows = Reshape(Expand(Unsqueeze(lin, t trailing axes), indices.shape[:-1] + tail),
//                  [N, tail...])
//   Y = Reshape(ScatterReduce(flat, rows, Reshape(updates, [N, tail...]), axis 0), shape(data))
void expand_scatter_nd_reduce(Expansion& e, const Flat& f, const std::string& red, DType t) {
  const std::string& data = e.input(0);
  const std::string& updates = e.input(2);
  const int64_t r = f.data_rank, q = f.indices_rank, k = f.k;
  std::string rows = f.lin;
  if (r > k) {
    std::vector<int64_t> trailing;
    for (int64_t j = q - 1; j < q - 1 + r - k; ++j) trailing.push_back(j);
    rows = op(e, "Unsqueeze", {rows, e.ints(trailing, "row_axes")}, "rows_nd", DType::I64);
  }
  // rows broadcast to the shape updates must have, indices.shape[:-1] + data.shape[k:] (not to
  // shape(updates), which would let a broadcastable but wrong updates through); the flat
  // Reshape of updates below then fails unless it has that many elements.
  const std::string lead = dims_of(e, e.input(1), 0, -1, "lead_dims");
  const std::string tail = dims_of(e, data, k, std::numeric_limits<int64_t>::max(), "tail_dims");
  const std::string want =
      op(e, "Concat", {lead, tail}, "updates_shape", DType::I64, {{"axis", int_attribute(0)}});
  rows = op(e, "Expand", {rows, want}, "rows_full", DType::I64);
  const std::string rs = op(e, "Concat", {e.ints({-1}, "any_rows"), tail}, "rows_shape", DType::I64,
                            {{"axis", int_attribute(0)}});
  rows = op(e, "Reshape", {rows, rs}, "rows_flat", DType::I64);
  const std::string u = op(e, "Reshape", {updates, rs}, "updates_flat", t);
  const std::string y = op(e, "ScatterReduce", {f.data, rows, u}, "scatter_flat", t,
                           {{"axis", int_attribute(0)}, {"reduction", string_attribute(red)}});
  const std::string ds = op(e, "Shape", {data}, "data_shape", DType::I64);
  e.add_to("Reshape", {y, ds}, {e.output(0)}, "scatter");
}

void expand_scatter_elements(Expansion& e) {
  const std::string red = scatter_reduction(e);
  const DType t = scatter_type(e);
  const int64_t axis = e.node().attr_int("axis", 0);
  if (red != "none" && red != "add") {
    e.add_to("ScatterReduce", {e.input(0), e.input(1), e.input(2)}, {e.output(0)}, "scatter",
             {{"axis", int_attribute(axis)}, {"reduction", string_attribute(red)}});
    return;
  }
  const bool add = red == "add";
  const std::string ds = op(e, "Shape", {e.input(0)}, "data_shape", DType::I64);
  finish_scatter(e, add, t, [&](const std::string& u, const std::string& tag) {
    return op(e, "GatherElementsGrad", {u, ds, e.input(1)}, tag, t,
              {{"axis", int_attribute(axis)}});
  });
}

void expand_scatter_nd(Expansion& e) {
  const std::string red = scatter_reduction(e);
  const DType t = scatter_type(e);
  const Flat f = flatten_nd(e, 0);
  check_scatter_nd_updates(e, f);
  if (red != "none" && red != "add") {
    expand_scatter_nd_reduce(e, f, red, t);
    return;
  }
  const bool add = red == "add";
  const std::string fs = op(e, "Shape", {f.data}, "flat_shape_of", DType::I64);
  const std::string ds = op(e, "Shape", {e.input(0)}, "data_shape", DType::I64);
  finish_scatter(e, add, t, [&](const std::string& u, const std::string& tag) {
    const std::string s =
        op(e, "GatherGrad", {u, fs, f.lin}, tag + "_flat", t, {{"axis", int_attribute(0)}});
    return op(e, "Reshape", {s, ds}, tag, t);
  });
}

void expand_reverse_sequence(Expansion& e) {
  const std::string& x = e.input(0);
  const std::string& lens = e.input(1);
  if (lens.empty()) e.fail("needs the input sequence_lens");
  const int64_t ta = e.node().attr_int("time_axis", 0), ba = e.node().attr_int("batch_axis", 1);
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    e.fail(cat("time_axis ", ta, " and batch_axis ", ba, " must be 0 and 1 or 1 and 0"));
  const DType lt = e.dtype(lens);
  if (lt != DType::Undefined && lt != DType::I64 && lt != DType::I32)
    e.fail(cat("sequence_lens '", lens, "' must be int64, got ", dtype_name(lt)));
  const Dims xs =
      known_shape(e, 0, "input", "the reversal index is broadcast over its trailing dims");
  const int64_t r = static_cast<int64_t>(xs.size());
  if (r < 2) e.fail(cat("input '", x, "' must have rank at least 2, got ", dims_str(xs)));
  // idx[t, b] = t < len[b] ? len[b] - 1 - t : t, as [T, 1] against [B] (time_axis 0) or
  // [1, T] against [B, 1] (time_axis 1).
  const std::string T = dim_scalar(e, x, ta, "steps");
  const std::string t =
      op(e, "Range", {e.ints({0}, "zero", true), T, e.ints({1}, "one", true)}, "t", DType::I64);
  const std::string tt =
      op(e, "Unsqueeze", {t, e.ints({ta == 0 ? 1 : 0}, "t_axes")}, "t_on_axis", DType::I64);
  std::string len = as_i64(e, lens, "lens_i64");
  if (ta == 1) len = op(e, "Unsqueeze", {len, e.ints({1}, "len_axes")}, "lens_on_axis", DType::I64);
  const std::string valid = op(e, "Less", {tt, len}, "valid", DType::Bool);
  const std::string last = op(e, "Sub", {len, e.ints({1}, "one_", true)}, "last", DType::I64);
  const std::string back = op(e, "Sub", {last, tt}, "reversed_t", DType::I64);
  std::string idx = op(e, "Where", {valid, back, tt}, "reverse_index", DType::I64);
  if (r > 2) {
    std::vector<int64_t> trailing;
    for (int64_t j = 2; j < r; ++j) trailing.push_back(j);
    idx = op(e, "Unsqueeze", {idx, e.ints(trailing, "trailing_axes")}, "reverse_index_nd",
             DType::I64);
  }
  const std::string xshape = op(e, "Shape", {x}, "x_shape", DType::I64);
  idx = op(e, "Expand", {idx, xshape}, "reverse_index_full", DType::I64);
  e.add_to("GatherElements", {x, idx}, {e.output(0)}, "reverse",
           {{"axis", int_attribute(ta)}});
}

}  // namespace oat::composite
