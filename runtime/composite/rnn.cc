// RNN, GRU and LSTM (opsets 7 and 14) as composite ops: the shared unrolling. The cells are in
// rnn_cells.cc, the helpers and activations in rnn_builder.cc, the overview in rnn.h.
//
// Shapes (layout 0; layout 1, from opset 14, swaps the first two dims of X, Y, initial_h/c,
// Y_h/c): X [seq, batch, input], W [dirs, G·H, input], R [dirs, G·H, H], B [dirs, 2·G·H] (Wb then
// Rb), sequence_lens [batch] int32, initial_h/initial_c [dirs, batch, H], P [dirs, 3·H];
// Y [seq, dirs, batch, H], Y_h/Y_c [dirs, batch, H]. G = 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f
// c).
//
// Per direction: XW = X·Wᵀ + (Wb + Rb) for all steps in one MatMul (GRU with linear_before_reset
// keeps Rbh per step); then per step the cell. The sequence length must be fixed in X's
// value_info (the loop is unrolled); batch may be symbolic. On a CPU Executor
// (LoweringOptions::cpu_inference) an F32 LSTM or GRU with the default activations and no
// sequence_lens is instead one MatMul for both directions and one fused LSTMSequence or
// GRUSequence node (runtime/cpu/kernels/rnn_sequence.cc).
//
// sequence_lens: at step t the state of batch row b is updated only where t < len[b]
// (Where(t < len, new, previous)), and Y is 0 there. The reverse direction starts at each
// sequence's last valid element: XW is time-reversed per batch row with the involution
//   idx[t, b] = len[b] − 1 − t   where t < len[b],   t   elsewhere
// (GatherElements on axis 0), run forward with the same mask, and Y is gathered back with idx.
#include "runtime/composite/rnn.h"

#include <algorithm>
#include <map>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"

namespace oat::composite {

namespace rnn {

namespace {

// What is known of a value's shape: an initializer's, or the value_info's (nullopt: unknown).
std::optional<std::vector<Dim>> shape_of(const Expansion& e, const std::string& v) {
  if (const Tensor* t = e.constant(v)) {
    std::vector<Dim> d;
    for (int64_t s : t->shape()) d.push_back(Dim{s, ""});
    return d;
  }
  if (const ValueInfo* vi = e.info(v)) return vi->shape;
  return std::nullopt;
}

std::string dims_str(const std::vector<Dim>& d) {
  ValueInfo v;
  v.shape = d;
  return v.shape_string();
}

// Checks the fixed dims of input `name` (index `i`) against `want` (< 0: any).
void check_shape(const Expansion& e, size_t i, const char* name, const std::vector<int64_t>& want) {
  const std::string& v = e.input(i);
  if (v.empty()) return;
  auto s = shape_of(e, v);
  if (!s) return;
  bool ok = s->size() == want.size();
  for (size_t k = 0; ok && k < want.size(); ++k)
    ok = want[k] < 0 || !(*s)[k].fixed() || (*s)[k].value == want[k];
  if (ok) return;
  std::string w = "[";
  for (size_t k = 0; k < want.size(); ++k)
    w += cat(k ? ", " : "", want[k] < 0 ? std::string("?") : std::to_string(want[k]));
  e.fail(cat("input ", name, " '", v, "' has shape ", dims_str(*s), ", expected ", w, "]"));
}

using StepFn = State (*)(Builder&, const DirectionWeights&, const std::string&, const State&,
                         const std::string&);

// The slices of a [dirs, ...] input per direction (Split on axis 0, Squeeze), "" when omitted.
std::vector<std::string> per_direction(Builder& b, const std::string& v, int64_t dirs,
                                       const std::string& tag, const std::vector<Dim>& inner) {
  std::vector<std::string> r(static_cast<size_t>(dirs));
  if (v.empty()) return r;
  std::vector<Dim> full = inner;
  full.insert(full.begin(), Dim{dirs, ""});
  std::vector<std::string> parts = {v};
  if (dirs > 1)
    parts = b.split(v, 0, std::vector<int64_t>(static_cast<size_t>(dirs), 1), tag, full);
  const std::string axes0 = b.e.ints({0}, tag + "_axes");
  for (int64_t d = 0; d < dirs; ++d)
    r[static_cast<size_t>(d)] =
        b.op("Squeeze", {parts[static_cast<size_t>(d)], axes0}, cat("d", d, "/", tag), inner);
  return r;
}

void expand(Expansion& e, Cell cell) {
  const Node& n = e.node();
  if (n.opset < 7)
    e.unsupported(cat(n.op_type, " before opset 7 (the opset-1 form with output_sequence)"),
                  cat("opset ", n.opset));
  Builder b(e, cell);
  const int64_t G = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  b.gates = G;
  const size_t n_inputs = cell == Cell::LSTM ? 8 : 6;
  if (n.inputs.size() > n_inputs)
    e.fail(cat(n.op_type, " takes at most ", n_inputs, " inputs, got ", n.inputs.size()));
  const std::string X = e.input(0), W = e.input(1), R = e.input(2), B = e.input(3),
                    lens = e.input(4), h0 = e.input(5);
  const std::string c0 = cell == Cell::LSTM ? e.input(6) : "";
  const std::string P = cell == Cell::LSTM ? e.input(7) : "";
  if (X.empty() || W.empty() || R.empty()) e.fail("inputs X, W and R are required");

  // Attributes.
  const std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    e.fail(cat("direction '", direction, "' is not forward, reverse or bidirectional"));
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (n.opset < 14 && n.has_attr("layout"))
    e.fail(cat("attribute 'layout' exists from opset 14; this node is opset ", n.opset));
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) e.fail(cat("layout must be 0 or 1, got ", layout));
  if (n.has_attr("clip")) {
    const float c = n.attr_float("clip", 0.0f);
    if (!(c > 0.0f)) e.fail(cat("clip must be positive, got ", c));
    b.clip = c;
  }
  if (cell == Cell::LSTM) b.input_forget = n.attr_int("input_forget", 0) != 0;
  if (cell == Cell::GRU) b.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  const auto acts = parse_activations(e, cell, dirs);

  // Types and sizes.
  b.dt = e.dtype(X) != DType::Undefined ? e.dtype(X) : e.dtype(W);
  if (!is_floating(b.dt))
    e.fail(cat("X '", X, "' must be a float tensor, its type is ",
               b.dt == DType::Undefined ? std::string("unknown") : dtype_name(b.dt)));
  const int seq_axis = layout == 0 ? 0 : 1, batch_axis = 1 - seq_axis;
  const auto xs = shape_of(e, X);
  if (!xs || xs->size() != 3 || !(*xs)[static_cast<size_t>(seq_axis)].fixed())
    e.fail(cat("X '", X, "' has shape ", xs ? dims_str(*xs) : std::string("?"), ": ", n.op_type,
               " runs unrolled over the sequence length, which must be a fixed dim ", seq_axis,
               " of X's shape (", layout == 0 ? "[seq, batch, input]" : "[batch, seq, input]",
               ", layout ", layout, ")"));
  b.seq = (*xs)[static_cast<size_t>(seq_axis)].value;
  if (b.seq < 1) e.unsupported("a sequence length of 0", "seq_length 0");
  b.batch = (*xs)[static_cast<size_t>(batch_axis)];
  const Dim in_dim = (*xs)[2];
  int64_t H = n.attr_int("hidden_size", -1);
  if (H < 0) {
    auto rs = shape_of(e, R);
    if (rs && rs->size() == 3 && (*rs)[2].fixed()) H = (*rs)[2].value;
  }
  if (H <= 0) e.fail("hidden_size is not set (and R's shape does not give it)");
  b.hidden = H;
  const int64_t GH = G * H, seq = b.seq;
  const int64_t I = in_dim.fixed() ? in_dim.value : -1;
  check_shape(e, 1, "W", {dirs, GH, I});
  check_shape(e, 2, "R", {dirs, GH, H});
  check_shape(e, 3, "B", {dirs, 2 * GH});
  if (cell == Cell::LSTM) check_shape(e, 7, "P", {dirs, 3 * H});

  const std::string Y = e.output(0), Yh = e.output(1);
  const std::string Yc = cell == Cell::LSTM ? e.output(2) : "";
  if (Y.empty() && Yh.empty() && Yc.empty()) return;  // nothing is read
  const Dim S{seq, ""}, Hd{H, ""};
  const std::vector<Dim> bH = b.bn(H);

  // X as [seq, batch, input]; initial states as [dirs, batch, H].
  const std::string Xs =
      layout == 0 ? X
                  : b.op("Transpose", {X}, "X_seq_major", std::vector<Dim>{S, b.batch, in_dim},
                         {{"perm", ints_attribute({1, 0, 2})}});
  auto dir_major = [&](const std::string& v, const std::string& tag) {
    if (v.empty() || layout == 0) return v;
    return b.op("Transpose", {v}, tag, std::vector<Dim>{Dim{dirs, ""}, b.batch, Hd},
                {{"perm", ints_attribute({1, 0, 2})}});
  };
  // On a CPU Executor (forward only) an F32 LSTM or GRU with the default activations and no
  // sequence_lens runs as one LSTMSequence / GRUSequence node after one MatMul for both
  // directions (runtime/cpu/kernels/rnn_sequence.cc).
  const std::vector<std::string> default_acts = default_activations(cell);
  if (cell != Cell::RNN && e.options().cpu_inference && b.dt == DType::F32 && lens.empty() &&
      std::all_of(acts.begin(), acts.end(), [&](const std::vector<Activation>& a) {
        return a.size() == default_acts.size() &&
               std::equal(a.begin(), a.end(), default_acts.begin(),
                          [](const Activation& x, const std::string& y) { return x.name == y; });
      })) {
    const Dim D{dirs, ""}, DG{dirs * GH, ""};
    // XW = X·[W_0; W_1]ᵀ: W [dirs, G·H, I] as [dirs·G·H, I], transposed.
    const std::string Wrows = b.op("Reshape", {W, e.ints({dirs * GH, -1}, "W_rows_shape")},
                                   "W_rows", std::vector<Dim>{DG, in_dim});
    const std::string Wt = b.op("Transpose", {Wrows}, "Wt", std::vector<Dim>{in_dim, DG},
                                {{"perm", ints_attribute({1, 0})}});
    const std::string xw = b.op("MatMul", {Xs, Wt}, "XW", std::vector<Dim>{S, b.batch, DG});
    const std::string Rt = b.op("Transpose", {R}, "Rt", std::vector<Dim>{D, Hd, Dim{GH, ""}},
                                {{"perm", ints_attribute({0, 2, 1})}});
    std::vector<std::string> ins = {xw, Rt, B, dir_major(h0, "initial_h_dir_major")};
    std::vector<std::string> outputs = {Y, Yh};
    std::map<std::string, Attribute> attrs = {{"direction", string_attribute(direction)}};
    if (cell == Cell::LSTM) {
      ins.push_back(dir_major(c0, "initial_c_dir_major"));
      ins.push_back(P);
      outputs.push_back(Yc);
      attrs["input_forget"] = int_attribute(b.input_forget);
    } else {
      attrs["linear_before_reset"] = int_attribute(b.linear_before_reset);
    }
    while (ins.back().empty()) ins.pop_back();
    if (b.clip) attrs["clip"] = float_attribute(*b.clip);
    const std::string op = cell == Cell::LSTM ? "LSTMSequence" : "GRUSequence";
    if (layout == 0) {
      e.add_to(op, ins, outputs, op, std::move(attrs));
      return;
    }
    // layout 1: Y [batch, seq, dirs, H], Y_h/Y_c [batch, dirs, H].
    const auto outs = e.add(op, ins, op, outputs.size(), std::move(attrs));
    e.set_info(outs[0], b.dt, std::vector<Dim>{S, D, b.batch, Hd});
    for (size_t k = 1; k < outs.size(); ++k)
      e.set_info(outs[k], b.dt, std::vector<Dim>{D, b.batch, Hd});
    for (size_t k = 0; k < outs.size(); ++k)
      if (!outputs[k].empty())
        b.op("Transpose", {outs[k]}, cat("batch_major_", k), std::nullopt,
             {{"perm", k == 0 ? ints_attribute({2, 0, 1, 3}) : ints_attribute({1, 0, 2})}},
             outputs[k]);
    return;
  }

  const auto Wd = per_direction(b, W, dirs, "W", {Dim{GH, ""}, in_dim});
  const auto Rd = per_direction(b, R, dirs, "R", {Dim{GH, ""}, Hd});
  const auto Bd = per_direction(b, B, dirs, "B", {Dim{2 * GH, ""}});
  const auto Pd = per_direction(b, P, dirs, "P", {Dim{3 * H, ""}});
  const auto h0d = per_direction(b, dir_major(h0, "initial_h_dir_major"), dirs, "initial_h", bH);
  const auto c0d = per_direction(b, dir_major(c0, "initial_c_dir_major"), dirs, "initial_c", bH);

  // sequence_lens: the masks t < len[b] per step ([batch, 1] bool), and the reversal index.
  std::vector<std::string> mask;  // per time index, empty without sequence_lens
  std::string mask2, rev_idx;     // [seq, batch] bool; [seq, batch] int64
  std::string zero_;              // 0 in X's type, made at its first use
  auto zero = [&] { return zero_.empty() ? (zero_ = b.scalar(0.0f, "zero")) : zero_; };
  if (!lens.empty()) {
    const DType lt = e.dtype(lens);
    if (lt != DType::Undefined && lt != DType::I32 && lt != DType::I64)
      e.fail(cat("sequence_lens '", lens, "' must be int32 (or int64), got ", dtype_name(lt)));
    std::string len64 = b.op("Cast", {lens}, "lens_i64", std::vector<Dim>{b.batch},
                             {{"to", int_attribute(7)}}, "", DType::I64);
    std::vector<int64_t> iota(static_cast<size_t>(seq));
    for (int64_t t = 0; t < seq; ++t) iota[static_cast<size_t>(t)] = t;
    std::string steps = e.constant_tensor(Tensor::from_vector<int64_t>({seq, 1}, iota), "steps");
    mask2 =
        b.op("Less", {steps, len64}, "valid", std::vector<Dim>{S, b.batch}, {}, "", DType::Bool);
    std::string mask3 = b.op("Unsqueeze", {mask2, e.ints({2}, "valid_axes")}, "valid3",
                             std::vector<Dim>{S, b.batch, Dim{1, ""}}, {}, "", DType::Bool);
    std::vector<std::string> parts = {mask3};
    if (seq > 1) {
      const std::string sizes =
          e.ints(std::vector<int64_t>(static_cast<size_t>(seq), 1), "valid_sizes");
      parts = e.add("Split", {mask3, sizes}, "valid_t", static_cast<size_t>(seq),
                    {{"axis", int_attribute(0)}});
      for (const auto& p : parts)
        e.set_info(p, DType::Bool, std::vector<Dim>{Dim{1, ""}, b.batch, Dim{1, ""}});
    }
    const std::string axes0 = e.ints({0}, "valid_t_axes");
    for (int64_t t = 0; t < seq; ++t)
      mask.push_back(b.op("Squeeze", {parts[static_cast<size_t>(t)], axes0}, cat("t", t, "/valid"),
                          std::vector<Dim>{b.batch, Dim{1, ""}}, {}, "", DType::Bool));
    const bool any_reverse = direction != "forward";
    if (any_reverse) {
      // idx[t, b] = t < len[b] ? len[b] - 1 - t : t
      std::string last = b.op("Sub", {len64, e.ints({1}, "one", true)}, "lens_minus_1",
                              std::vector<Dim>{b.batch}, {}, "", DType::I64);
      std::string back = b.op("Sub", {last, steps}, "reversed_t", std::vector<Dim>{S, b.batch}, {},
                              "", DType::I64);
      rev_idx = b.op("Where", {mask2, back, steps}, "reverse_index", std::vector<Dim>{S, b.batch},
                     {}, "", DType::I64);
    }
  }

  std::vector<std::string> y_dirs, h_last, c_last;
  const StepFn step = cell == Cell::RNN ? rnn_step : cell == Cell::GRU ? gru_step : lstm_step;
  for (int64_t d = 0; d < dirs; ++d) {
    const size_t ds = static_cast<size_t>(d);
    const std::string dn = cat("d", d);
    const bool reverse = direction == "reverse" || d == 1;
    const bool gathered = reverse && !mask.empty();  // reversed per batch row by GatherElements
    DirectionWeights w;
    w.acts = acts[ds];

    // XW = X·Wᵀ + Wb + Rb for every step: [seq, batch, G·H].
    std::string Wt = b.op("Transpose", {Wd[ds]}, dn + "/Wt", std::vector<Dim>{in_dim, Dim{GH, ""}},
                          {{"perm", ints_attribute({1, 0})}});
    std::string xw =
        b.op("MatMul", {Xs, Wt}, dn + "/XW", std::vector<Dim>{S, b.batch, Dim{GH, ""}});
    if (!B.empty()) {
      auto wr = b.split(Bd[ds], 0, {GH, GH}, dn + "/B", {Dim{2 * GH, ""}});  // Wb, Rb
      std::string bias;
      if (cell == Cell::GRU && b.linear_before_reset) {
        // Rbh stays inside rt (.) (Ht-1·Rhᵀ + Rbh): fold [Wbz+Rbz, Wbr+Rbr, Wbh] only.
        auto wb = b.split(wr[0], 0, {2 * H, H}, dn + "/Wb", {Dim{GH, ""}});
        auto rb = b.split(wr[1], 0, {2 * H, H}, dn + "/Rb", {Dim{GH, ""}});
        std::string zr =
            b.op("Add", {wb[0], rb[0]}, dn + "/bias_zr", std::vector<Dim>{Dim{2 * H, ""}});
        bias = b.op("Concat", {zr, wb[1]}, dn + "/bias", std::vector<Dim>{Dim{GH, ""}},
                    {{"axis", int_attribute(0)}});
        w.Rbh = rb[1];
      } else {
        bias = b.op("Add", {wr[0], wr[1]}, dn + "/bias", std::vector<Dim>{Dim{GH, ""}});
      }
      xw = b.op("Add", {xw, bias}, dn + "/XW_b", std::vector<Dim>{S, b.batch, Dim{GH, ""}});
    }
    if (cell == Cell::GRU && !b.linear_before_reset) {
      auto rr = b.split(Rd[ds], 0, {2 * H, H}, dn + "/R", {Dim{GH, ""}, Hd});
      w.Rt_zr = b.op("Transpose", {rr[0]}, dn + "/Rt_zr", std::vector<Dim>{Hd, Dim{2 * H, ""}},
                     {{"perm", ints_attribute({1, 0})}});
      w.Rt_h = b.op("Transpose", {rr[1]}, dn + "/Rt_h", std::vector<Dim>{Hd, Hd},
                    {{"perm", ints_attribute({1, 0})}});
    } else {
      w.Rt = b.op("Transpose", {Rd[ds]}, dn + "/Rt", std::vector<Dim>{Hd, Dim{GH, ""}},
                  {{"perm", ints_attribute({1, 0})}});
    }
    if (!P.empty()) {
      auto p = b.split(Pd[ds], 0, {H, H, H}, dn + "/P", {Dim{3 * H, ""}});
      w.Pi = p[0], w.Po = p[1], w.Pf = p[2];
    }
    if (gathered) {
      std::string idx = b.op("Unsqueeze", {rev_idx, e.ints({2}, "axes")}, dn + "/XW_index3",
                             std::vector<Dim>{S, b.batch, Dim{1, ""}}, {}, "", DType::I64);
      idx = b.op("Expand", {idx, e.ints({1, 1, GH}, "shape")}, dn + "/XW_index",
                 std::vector<Dim>{S, b.batch, Dim{GH, ""}}, {}, "", DType::I64);
      xw = b.op("GatherElements", {xw, idx}, dn + "/XW_reversed",
                std::vector<Dim>{S, b.batch, Dim{GH, ""}}, {{"axis", int_attribute(0)}});
    }

    // The steps' slices XW[t]: [batch, G·H].
    std::vector<std::string> xt = {xw};
    if (seq > 1) {
      xt = e.add("Split", {xw, e.ints(std::vector<int64_t>(static_cast<size_t>(seq), 1), "sizes")},
                 dn + "/XW_t", static_cast<size_t>(seq), {{"axis", int_attribute(0)}});
      for (const auto& v : xt)
        e.set_info(v, b.dt, std::vector<Dim>{Dim{1, ""}, b.batch, Dim{GH, ""}});
    }
    const std::string axes0 = e.ints({0}, "axes");
    for (int64_t t = 0; t < seq; ++t)
      xt[static_cast<size_t>(t)] =
          b.op("Squeeze", {xt[static_cast<size_t>(t)], axes0}, cat(dn, "/t", t, "/XW"), b.bn(GH));

    // The recurrence, in processing order; ys[t] is Y at time index t (of XW_reversed when
    // gathered).
    State s{h0d[ds], c0d[ds]};
    std::vector<std::string> ys(static_cast<size_t>(seq));
    for (int64_t k = 0; k < seq; ++k) {
      const int64_t t = reverse && !gathered ? seq - 1 - k : k;
      const size_t ts = static_cast<size_t>(t);
      const std::string tag = cat(dn, "/t", t);
      State next = step(b, w, xt[ts], s, tag);
      if (mask.empty()) {
        ys[ts] = next.h;
        s = next;
        continue;
      }
      // Where t ≥ len[b]: the state is held, Y is 0.
      if (!Y.empty() || s.h.empty())
        ys[ts] = b.op("Where", {mask[ts], next.h, zero()}, tag + "/Y", bH);
      State held;
      held.h = s.h.empty() ? ys[ts] : b.op("Where", {mask[ts], next.h, s.h}, tag + "/H_held", bH);
      if (cell == Cell::LSTM)
        held.c = b.op("Where", {mask[ts], next.c, s.c.empty() ? zero() : s.c}, tag + "/C_held", bH);
      s = held;
    }
    h_last.push_back(s.h);
    c_last.push_back(s.c);

    if (Y.empty()) continue;
    // Y of this direction: [seq, 1, batch, H] (written straight into Y when it is the last step).
    const bool direct = dirs == 1 && layout == 0;
    const std::vector<Dim> y4 = {S, Dim{1, ""}, b.batch, Hd};
    std::string cat_t = ys[0];
    if (seq > 1)
      cat_t = b.op("Concat", ys, dn + "/Y_steps",
                   std::vector<Dim>{b.batch.fixed() ? Dim{seq * b.batch.value, ""} : Dim{}, Hd},
                   {{"axis", int_attribute(0)}});
    std::string yd = b.op("Reshape", {cat_t, e.ints({seq, 1, -1, H}, "Y_shape")}, dn + "/Y", y4, {},
                          direct && !gathered ? Y : "");
    if (gathered) {
      std::string idx =
          b.op("Unsqueeze", {rev_idx, e.ints({1, 3}, "axes")}, dn + "/Y_index4",
               std::vector<Dim>{S, Dim{1, ""}, b.batch, Dim{1, ""}}, {}, "", DType::I64);
      idx = b.op("Expand", {idx, e.ints({1, 1, 1, H}, "shape")}, dn + "/Y_index", y4, {}, "",
                 DType::I64);
      yd = b.op("GatherElements", {yd, idx}, dn + "/Y_in_time", y4,
                {{"axis", int_attribute(0)}}, direct ? Y : "");
    }
    y_dirs.push_back(yd);
  }

  // Y: [seq, dirs, batch, H], or [batch, seq, dirs, H] (layout 1).
  if (!Y.empty() && !(dirs == 1 && layout == 0)) {
    std::string y = y_dirs[0];
    if (dirs == 2)
      y = b.op("Concat", y_dirs, "Y_dirs", std::vector<Dim>{S, Dim{2, ""}, b.batch, Hd},
               {{"axis", int_attribute(1)}}, layout == 0 ? Y : "");
    if (layout == 1)
      b.op("Transpose", {y}, "Y_batch_major", std::nullopt,
           {{"perm", ints_attribute({2, 0, 1, 3})}}, Y);
  }
  // Y_h / Y_c: [dirs, batch, H], or [batch, dirs, H] (layout 1).
  auto final_state = [&](const std::vector<std::string>& last, const std::string& out,
                         const std::string& tag) {
    if (out.empty()) return;
    const int64_t axis = layout == 0 ? 0 : 1;
    const std::string axes = e.ints({axis}, tag + "_axes");
    std::vector<Dim> one = layout == 0 ? std::vector<Dim>{Dim{1, ""}, b.batch, Hd}
                                       : std::vector<Dim>{b.batch, Dim{1, ""}, Hd};
    if (dirs == 1) {
      b.op("Unsqueeze", {last[0], axes}, tag, one, {}, out);
      return;
    }
    std::vector<std::string> parts;
    for (int64_t d = 0; d < dirs; ++d)
      parts.push_back(
          b.op("Unsqueeze", {last[static_cast<size_t>(d)], axes}, cat("d", d, "/", tag), one));
    b.op("Concat", parts, tag, std::nullopt, {{"axis", int_attribute(axis)}}, out);
  };
  final_state(h_last, Yh, "Y_h");
  final_state(c_last, Yc, "Y_c");
}

}  // namespace

}  // namespace rnn

void expand_rnn(Expansion& e) { rnn::expand(e, rnn::Cell::RNN); }
void expand_gru(Expansion& e) { rnn::expand(e, rnn::Cell::GRU); }
void expand_lstm(Expansion& e) { rnn::expand(e, rnn::Cell::LSTM); }

}  // namespace oat::composite
