// The three recurrent cells of RNN, GRU and LSTM, one step each (runtime/composite/rnn.h).
// Notation of the ONNX spec: X input, H hidden state, C cell state, W/R/B/P the input, recurrence,
// bias and peephole weights, subscripts the gates, (.) the elementwise product, f/g/h the
// activations; "clip" (when set) bounds every gate's pre-activation to [-clip, clip].
//
// `xw` holds Xt·Wᵀ plus the biases that are constant over time (rnn.cc folds Wb + Rb in, except
// GRU's Rbh with linear_before_reset = 1), so a step adds only the recurrent terms.
#include "runtime/composite/rnn.h"

namespace oat::composite::rnn {

// RNN (one gate):
//   Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
State rnn_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
               const std::string& tag) {
  const int64_t H = b.hidden;
  std::string pre = xw;
  if (!prev.h.empty()) {
    std::string hr = b.op("MatMul", {prev.h, w.Rt}, tag + "/HR", b.bn(H));
    pre = b.op("Add", {xw, hr}, tag + "/pre", b.bn(H));
  }
  return {b.gate(w.acts[0], pre, H, tag + "/H"), ""};
}

// GRU (gates z, r, h):
//   zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)
//   rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)
//   ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)    # linear_before_reset = 0
//   ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)  # linear_before_reset != 0
//   Ht = (1 - zt) (.) ht + zt (.) Ht-1
// computed as Ht = ht + zt (.) (Ht-1 - ht) (the same value, and no constant 1), and at t = 0
// without initial_h as ht - zt (.) ht. z and r share f, so they go through one clip and one f.
State gru_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
               const std::string& tag) {
  const int64_t H = b.hidden;
  auto xs = b.split(xw, 1, {2 * H, H}, tag + "/x", b.bn(3 * H));  // [xz xr], xh
  std::string zr_pre = xs[0], h_rec;  // h_rec: what r multiplies (linear_before_reset = 1)
  if (!prev.h.empty()) {
    if (b.linear_before_reset) {
      std::string hr = b.op("MatMul", {prev.h, w.Rt}, tag + "/HR", b.bn(3 * H));
      auto hs = b.split(hr, 1, {2 * H, H}, tag + "/HR", b.bn(3 * H));
      zr_pre = b.op("Add", {xs[0], hs[0]}, tag + "/zr_pre", b.bn(2 * H));
      h_rec = w.Rbh.empty() ? hs[1] : b.op("Add", {hs[1], w.Rbh}, tag + "/HRh_b", b.bn(H));
    } else {
      std::string hr = b.op("MatMul", {prev.h, w.Rt_zr}, tag + "/HRzr", b.bn(2 * H));
      zr_pre = b.op("Add", {xs[0], hr}, tag + "/zr_pre", b.bn(2 * H));
    }
  } else if (b.linear_before_reset) {
    h_rec = w.Rbh;  // Ht-1 = 0: rt (.) Rbh
  }
  std::string zr = b.gate(w.acts[0], zr_pre, 2 * H, tag + "/zr");
  auto zrs = b.split(zr, 1, {H, H}, tag + "/zr", b.bn(2 * H));
  const std::string &z = zrs[0], &r = zrs[1];

  std::string h_pre = xs[1];
  if (b.linear_before_reset) {
    if (!h_rec.empty()) {
      std::string rh = b.op("Mul", {r, h_rec}, tag + "/r_HRh", b.bn(H));
      h_pre = b.op("Add", {xs[1], rh}, tag + "/h_pre", b.bn(H));
    }
  } else if (!prev.h.empty()) {
    std::string rh = b.op("Mul", {r, prev.h}, tag + "/rH", b.bn(H));
    std::string rhr = b.op("MatMul", {rh, w.Rt_h}, tag + "/rH_Rh", b.bn(H));
    h_pre = b.op("Add", {xs[1], rhr}, tag + "/h_pre", b.bn(H));
  }
  std::string ht = b.gate(w.acts[1], h_pre, H, tag + "/h");

  std::string Ht;
  if (prev.h.empty()) {
    std::string zh = b.op("Mul", {z, ht}, tag + "/zh", b.bn(H));
    Ht = b.op("Sub", {ht, zh}, tag + "/H", b.bn(H));
  } else {
    std::string d = b.op("Sub", {prev.h, ht}, tag + "/Hprev_h", b.bn(H));
    std::string zd = b.op("Mul", {z, d}, tag + "/z_Hprev_h", b.bn(H));
    Ht = b.op("Add", {ht, zd}, tag + "/H", b.bn(H));
  }
  return {Ht, ""};
}

// LSTM (gates i, o, f, c in W, R and B; peepholes P in the order i, o, f):
//   it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)
//   ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf)
//   ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)
//   Ct = ft (.) Ct-1 + it (.) ct
//   ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)
//   Ht = ot (.) h(Ct)
// input_forget = 1 couples the input and forget gates, ft = 1 - it (as ONNX Runtime does), so
// Ct = Ct-1 + it (.) (ct - Ct-1). Without peepholes i, o and f share one clip and one f.
// h(Ct) is not clipped (clip bounds the gates' inputs, as in ONNX Runtime).
State lstm_step(Builder& b, const DirectionWeights& w, const std::string& xw, const State& prev,
                const std::string& tag) {
  const int64_t H = b.hidden;
  std::string pre = xw;
  if (!prev.h.empty()) {
    std::string hr = b.op("MatMul", {prev.h, w.Rt}, tag + "/HR", b.bn(4 * H));
    pre = b.op("Add", {xw, hr}, tag + "/pre", b.bn(4 * H));
  }
  const bool peep = !w.Pi.empty();
  std::string i, o, f, po;  // po: o's pre-activation when it waits for Ct (peepholes)
  std::string c_pre;
  if (!peep) {
    auto parts = b.split(pre, 1, {3 * H, H}, tag + "/pre", b.bn(4 * H));
    std::string iof = b.gate(w.acts[0], parts[0], 3 * H, tag + "/iof");
    auto g = b.split(iof, 1, {H, H, H}, tag + "/iof", b.bn(3 * H));
    i = g[0], o = g[1], f = g[2];
    c_pre = parts[1];
  } else {
    auto parts = b.split(pre, 1, {H, H, H, H}, tag + "/pre", b.bn(4 * H));
    std::string pi = parts[0], pf = parts[2];
    po = parts[1];
    c_pre = parts[3];
    if (!prev.c.empty()) {
      std::string ci = b.op("Mul", {w.Pi, prev.c}, tag + "/Pi_C", b.bn(H));
      pi = b.op("Add", {pi, ci}, tag + "/i_pre", b.bn(H));
      if (!b.input_forget) {
        std::string cf = b.op("Mul", {w.Pf, prev.c}, tag + "/Pf_C", b.bn(H));
        pf = b.op("Add", {pf, cf}, tag + "/f_pre", b.bn(H));
      }
    }
    i = b.gate(w.acts[0], pi, H, tag + "/i");
    if (!b.input_forget) f = b.gate(w.acts[0], pf, H, tag + "/f");
  }
  std::string c = b.gate(w.acts[1], c_pre, H, tag + "/c");

  std::string C;
  if (prev.c.empty()) {
    C = b.op("Mul", {i, c}, tag + "/C", b.bn(H));
  } else if (b.input_forget) {
    std::string d = b.op("Sub", {c, prev.c}, tag + "/c_Cprev", b.bn(H));
    std::string id = b.op("Mul", {i, d}, tag + "/i_c_Cprev", b.bn(H));
    C = b.op("Add", {prev.c, id}, tag + "/C", b.bn(H));
  } else {
    std::string fc = b.op("Mul", {f, prev.c}, tag + "/fC", b.bn(H));
    std::string ic = b.op("Mul", {i, c}, tag + "/ic", b.bn(H));
    C = b.op("Add", {fc, ic}, tag + "/C", b.bn(H));
  }
  if (peep) {
    std::string co = b.op("Mul", {w.Po, C}, tag + "/Po_C", b.bn(H));
    std::string p = b.op("Add", {po, co}, tag + "/o_pre", b.bn(H));
    o = b.gate(w.acts[0], p, H, tag + "/o");
  }
  std::string hc = b.activate(w.acts[2], C, H, tag + "/hC");
  std::string Ht = b.op("Mul", {o, hc}, tag + "/H", b.bn(H));
  return {Ht, C};
}

}  // namespace oat::composite::rnn
