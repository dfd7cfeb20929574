// Test helpers for RNN, GRU and LSTM (runtime/composite/rnn.cc): a case description, random
// inputs, the one-node graph, and a naive double-precision reference written from the ONNX spec's
// equations with plain loops (per batch row, per step), independent of the expansion.
#pragma once

#include <cctype>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace oat_test::rnn {

using oat::Attribute;
using oat::Dim;
using oat::DType;
using oat::Tensor;

struct Act {
  std::string name;
  float alpha = 0, beta = 0;
};

// How many of activation_alpha / activation_beta an activation consumes.
inline std::string canonical(std::string a) {
  for (const char* k : {"Sigmoid", "Tanh", "Relu", "LeakyRelu", "ThresholdedRelu", "Elu",
                        "HardSigmoid", "Softsign", "Softplus", "Affine", "ScaledTanh"}) {
    std::string l = k, m = a;
    for (auto& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (auto& ch : m) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (l == m) return k;
  }
  return a;
}

inline int n_alpha(std::string a) {
  a = canonical(a);
  return a == "LeakyRelu" || a == "ThresholdedRelu" || a == "Elu" || a == "HardSigmoid" ||
                 a == "Affine" || a == "ScaledTanh"
             ? 1
             : 0;
}
inline int n_beta(std::string a) {
  a = canonical(a);
  return a == "HardSigmoid" || a == "Affine" || a == "ScaledTanh" ? 1 : 0;
}

inline double activate(const Act& act, double x) {
  Act a = act;
  a.name = canonical(a.name);
  const double al = a.alpha, be = a.beta;
  if (a.name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (a.name == "Tanh") return std::tanh(x);
  if (a.name == "Relu") return x > 0 ? x : 0;
  if (a.name == "LeakyRelu") return x < 0 ? al * x : x;
  if (a.name == "ThresholdedRelu") return x > al ? x : 0;
  if (a.name == "Elu") return x < 0 ? al * (std::exp(x) - 1) : x;
  if (a.name == "HardSigmoid") return std::max(0.0, std::min(1.0, al * x + be));
  if (a.name == "Softsign") return x / (1 + std::abs(x));
  if (a.name == "Softplus") return std::log1p(std::exp(x));
  if (a.name == "Affine") return al * x + be;
  if (a.name == "ScaledTanh") return al * std::tanh(be * x);
  throw std::runtime_error("test: unknown activation " + a.name);
}

struct Case {
  std::string op = "LSTM";  // RNN, GRU, LSTM
  std::string name = "rnn0";
  int64_t opset = 14;
  int64_t seq = 3, batch = 2, input = 4, hidden = 3;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, init_h = false, init_c = false, peepholes = false;
  std::vector<int32_t> lens;  // sequence_lens, empty: not given
  std::optional<float> clip;
  int64_t input_forget = 0, linear_before_reset = 0;
  std::vector<Act> acts;         // empty: the defaults; else every direction's, in order
  bool alpha_beta_attrs = true;  // false: no activation_alpha/beta (the defaults must be in acts)
  bool y = true, y_h = true, y_c = true;
  DType dtype = DType::F32;
  bool symbolic_batch = false;  // X's batch dim is "batch" in the graph
  bool hidden_attr = true;      // hidden_size set (else R's shape gives it)
  unsigned seed = 1;

  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  std::vector<Act> activations() const {
    if (!acts.empty()) return acts;
    std::vector<Act> per = op == "RNN"   ? std::vector<Act>{{"Tanh"}}
                           : op == "GRU" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}}
                                         : std::vector<Act>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
    std::vector<Act> all;
    for (int64_t d = 0; d < dirs(); ++d) all.insert(all.end(), per.begin(), per.end());
    return all;
  }
};

// Inputs in double, layout 0 (X [seq, batch, input], initial states [dirs, batch, H]).
struct Inputs {
  std::vector<double> X, W, R, B, h0, c0, P;
};

// Rounds to the case's dtype (so the reference sees the values the graph is fed).
inline double rounded(double v, DType t) {
  if (t == DType::F16)
    return static_cast<double>(static_cast<float>(Eigen::half(static_cast<float>(v))));
  if (t == DType::F64) return v;
  return static_cast<double>(static_cast<float>(v));
}

inline Inputs make_inputs(const Case& c) {
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](size_t n, double scale) {
    std::vector<double> v(n);
    for (auto& x : v) x = rounded(scale * u(rng), c.dtype);
    return v;
  };
  const size_t D = static_cast<size_t>(c.dirs()), GH = static_cast<size_t>(c.gates() * c.hidden);
  const size_t S = static_cast<size_t>(c.seq), N = static_cast<size_t>(c.batch),
               I = static_cast<size_t>(c.input), H = static_cast<size_t>(c.hidden);
  Inputs in;
  in.X = fill(S * N * I, 1.0);
  in.W = fill(D * GH * I, 0.6);
  in.R = fill(D * GH * H, 0.6);
  if (c.bias) in.B = fill(D * 2 * GH, 0.5);
  if (c.init_h) in.h0 = fill(D * N * H, 0.8);
  if (c.init_c) in.c0 = fill(D * N * H, 0.8);
  if (c.peepholes) in.P = fill(D * 3 * H, 0.5);
  return in;
}

// Expected outputs in layout 0: Y [seq, dirs, batch, H], Y_h and Y_c [dirs, batch, H].
struct Outputs {
  std::vector<double> Y, Yh, Yc;
};

inline Outputs reference(const Case& c, const Inputs& in) {
  const int64_t S = c.seq, N = c.batch, I = c.input, H = c.hidden, G = c.gates(), D = c.dirs();
  const auto acts = c.activations();
  const int64_t per = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  Outputs out;
  out.Y.assign(static_cast<size_t>(S * D * N * H), 0.0);
  out.Yh.assign(static_cast<size_t>(D * N * H), 0.0);
  out.Yc.assign(static_cast<size_t>(D * N * H), 0.0);
  auto clipv = [&](double v) {
    return c.clip ? std::max<double>(-*c.clip, std::min<double>(*c.clip, v)) : v;
  };
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    const Act& f = acts[static_cast<size_t>(d * per)];
    const Act& g = acts[static_cast<size_t>(d * per + std::min<int64_t>(1, per - 1))];
    const Act& h = acts[static_cast<size_t>(d * per + std::min<int64_t>(2, per - 1))];
    auto Wv = [&](int64_t row, int64_t i) {
      return in.W[static_cast<size_t>((d * G * H + row) * I + i)];
    };
    auto Rv = [&](int64_t row, int64_t k) {
      return in.R[static_cast<size_t>((d * G * H + row) * H + k)];
    };
    auto Wb = [&](int64_t row) {
      return c.bias ? in.B[static_cast<size_t>(d * 2 * G * H + row)] : 0.0;
    };
    auto Rb = [&](int64_t row) {
      return c.bias ? in.B[static_cast<size_t>(d * 2 * G * H + G * H + row)] : 0.0;
    };
    auto Pv = [&](int64_t gate, int64_t j) {
      return c.peepholes ? in.P[static_cast<size_t>(d * 3 * H + gate * H + j)] : 0.0;
    };
    for (int64_t b = 0; b < N; ++b) {
      std::vector<double> Hs(static_cast<size_t>(H), 0.0), Cs(static_cast<size_t>(H), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (c.init_h) Hs[static_cast<size_t>(j)] = in.h0[static_cast<size_t>((d * N + b) * H + j)];
        if (c.init_c) Cs[static_cast<size_t>(j)] = in.c0[static_cast<size_t>((d * N + b) * H + j)];
      }
      const int64_t len = c.lens.empty() ? S : c.lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        // xw[row] = Xt·W[row] ; hr[row] = Ht-1·R[row]
        std::vector<double> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H));
        for (int64_t row = 0; row < G * H; ++row) {
          double a = 0, r = 0;
          for (int64_t i = 0; i < I; ++i)
            a += in.X[static_cast<size_t>((t * N + b) * I + i)] * Wv(row, i);
          for (int64_t k = 0; k < H; ++k) r += Hs[static_cast<size_t>(k)] * Rv(row, k);
          xw[static_cast<size_t>(row)] = a;
          hr[static_cast<size_t>(row)] = r;
        }
        std::vector<double> Hn(static_cast<size_t>(H)), Cn(static_cast<size_t>(H));
        auto at = [](const std::vector<double>& v, int64_t k) { return v[static_cast<size_t>(k)]; };
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j)
            Hn[static_cast<size_t>(j)] = activate(f, clipv(at(xw, j) + at(hr, j) + Wb(j) + Rb(j)));
        } else if (c.op == "GRU") {
          std::vector<double> z(static_cast<size_t>(H)), r(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = activate(f, clipv(at(xw, j) + at(hr, j) + Wb(j) + Rb(j)));
            r[static_cast<size_t>(j)] =
                activate(f, clipv(at(xw, H + j) + at(hr, H + j) + Wb(H + j) + Rb(H + j)));
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre;
            if (c.linear_before_reset) {
              pre = at(xw, 2 * H + j) + at(r, j) * (at(hr, 2 * H + j) + Rb(2 * H + j)) +
                    Wb(2 * H + j);
            } else {
              double rr = 0;
              for (int64_t k = 0; k < H; ++k) rr += at(r, k) * at(Hs, k) * Rv(2 * H + j, k);
              pre = at(xw, 2 * H + j) + rr + Rb(2 * H + j) + Wb(2 * H + j);
            }
            const double hh = activate(g, clipv(pre));
            Hn[static_cast<size_t>(j)] = (1 - at(z, j)) * hh + at(z, j) * at(Hs, j);
          }
        } else {  // LSTM, gates i o f c
          for (int64_t j = 0; j < H; ++j) {
            auto pre = [&](int64_t gate) {
              return at(xw, gate * H + j) + at(hr, gate * H + j) + Wb(gate * H + j) +
                     Rb(gate * H + j);
            };
            const double it = activate(f, clipv(pre(0) + Pv(0, j) * at(Cs, j)));
            const double ft =
                c.input_forget ? 1 - it : activate(f, clipv(pre(2) + Pv(2, j) * at(Cs, j)));
            const double ct = activate(g, clipv(pre(3)));
            const double Ct = ft * at(Cs, j) + it * ct;
            const double ot = activate(f, clipv(pre(1) + Pv(1, j) * Ct));
            Cn[static_cast<size_t>(j)] = Ct;
            Hn[static_cast<size_t>(j)] = ot * activate(h, Ct);
          }
        }
        Hs = Hn;
        if (c.op == "LSTM") Cs = Cn;
        for (int64_t j = 0; j < H; ++j)
          out.Y[static_cast<size_t>(((t * D + d) * N + b) * H + j)] = at(Hs, j);
      }
      for (int64_t j = 0; j < H; ++j) {
        out.Yh[static_cast<size_t>((d * N + b) * H + j)] = Hs[static_cast<size_t>(j)];
        out.Yc[static_cast<size_t>((d * N + b) * H + j)] = Cs[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

// Permutes a row-major tensor of `shape` by `perm` (numpy transpose), in double.
inline std::vector<double> transpose(const std::vector<double>& v,
                                     const std::vector<int64_t>& shape,
                                     const std::vector<int64_t>& perm) {
  const size_t r = shape.size();
  std::vector<int64_t> out_shape(r), stride(r, 1);
  for (size_t k = r - 1; k > 0; --k) stride[k - 1] = stride[k] * shape[k];
  for (size_t k = 0; k < r; ++k) out_shape[k] = shape[static_cast<size_t>(perm[k])];
  std::vector<double> o(v.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t n = 0; n < v.size(); ++n) {
    int64_t src = 0;
    for (size_t k = 0; k < r; ++k) src += idx[k] * stride[static_cast<size_t>(perm[k])];
    o[n] = v[static_cast<size_t>(src)];
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
  return o;
}

inline Tensor tensor(const std::vector<double>& v, oat::Shape s, DType t) {
  std::vector<float> f(v.begin(), v.end());
  return oat::cast_tensor(Tensor::from_vector<float>(std::move(s), f), t);
}

inline Attribute a_int(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

// The one-node graph of case `c` (inputs named X, W, R, B, sequence_lens, initial_h, initial_c,
// P; outputs Y, Y_h, Y_c) and its feeds.
inline oat::Graph graph(const Case& c, const Inputs& in, std::map<std::string, Tensor>& feeds) {
  oat::Graph g;
  g.opsets[""] = c.opset;
  oat::Node n;
  n.name = c.name;
  n.op_type = c.op;
  n.op = oat::op_from_name(c.op);
  n.opset = c.opset;
  Attribute s;
  s.kind = Attribute::Kind::String;
  s.s = c.direction;
  n.attrs["direction"] = s;
  if (c.hidden_attr) n.attrs["hidden_size"] = a_int(c.hidden);
  if (c.layout) n.attrs["layout"] = a_int(c.layout);
  if (c.clip) {
    Attribute a;
    a.kind = Attribute::Kind::Float;
    a.f = *c.clip;
    n.attrs["clip"] = a;
  }
  if (c.op == "LSTM" && c.input_forget) n.attrs["input_forget"] = a_int(c.input_forget);
  if (c.op == "GRU") n.attrs["linear_before_reset"] = a_int(c.linear_before_reset);
  if (!c.acts.empty()) {
    Attribute names, alpha, beta;
    names.kind = Attribute::Kind::Strings;
    alpha.kind = beta.kind = Attribute::Kind::Floats;
    for (const Act& a : c.acts) {
      names.strings.push_back(a.name);
      if (n_alpha(a.name)) alpha.floats.push_back(a.alpha);
      if (n_beta(a.name)) beta.floats.push_back(a.beta);
    }
    n.attrs["activations"] = names;
    if (!c.alpha_beta_attrs) alpha.floats.clear(), beta.floats.clear();
    if (!alpha.floats.empty()) n.attrs["activation_alpha"] = alpha;
    if (!beta.floats.empty()) n.attrs["activation_beta"] = beta;
  }
  const int64_t S = c.seq, N = c.batch, I = c.input, H = c.hidden, D = c.dirs(), GH = c.gates() * H;
  const Dim batch = c.symbolic_batch ? Dim{-1, "batch"} : Dim{N, ""};
  auto input = [&](const std::string& name, const Tensor& t, std::vector<Dim> dims) {
    n.inputs.push_back(name);
    oat::ValueInfo vi;
    vi.name = name;
    vi.dtype = t.dtype();
    vi.shape = std::move(dims);
    g.inputs.push_back(vi);
    feeds[name] = t;
  };
  auto none = [&] { n.inputs.push_back(""); };
  auto fx = [](int64_t v) { return Dim{v, ""}; };
  if (c.layout == 0)
    input("X", tensor(in.X, {S, N, I}, c.dtype), {fx(S), batch, fx(I)});
  else
    input("X", tensor(transpose(in.X, {S, N, I}, {1, 0, 2}), {N, S, I}, c.dtype),
          {batch, fx(S), fx(I)});
  input("W", tensor(in.W, {D, GH, I}, c.dtype), {fx(D), fx(GH), fx(I)});
  input("R", tensor(in.R, {D, GH, H}, c.dtype), {fx(D), fx(GH), fx(H)});
  if (c.bias)
    input("B", tensor(in.B, {D, 2 * GH}, c.dtype), {fx(D), fx(2 * GH)});
  else
    none();
  if (!c.lens.empty())
    input("sequence_lens", Tensor::from_vector<int32_t>({N}, c.lens), {batch});
  else
    none();
  auto state = [&](const std::string& name, const std::vector<double>& v) {
    if (c.layout == 0)
      input(name, tensor(v, {D, N, H}, c.dtype), {fx(D), batch, fx(H)});
    else
      input(name, tensor(transpose(v, {D, N, H}, {1, 0, 2}), {N, D, H}, c.dtype),
            {batch, fx(D), fx(H)});
  };
  if (c.init_h)
    state("initial_h", in.h0);
  else
    none();
  if (c.op == "LSTM") {
    if (c.init_c)
      state("initial_c", in.c0);
    else
      none();
    if (c.peepholes) input("P", tensor(in.P, {D, 3 * H}, c.dtype), {fx(D), fx(3 * H)});
  }
  while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
  auto output = [&](bool want, const std::string& name) {
    n.outputs.push_back(want ? name : "");
    if (want) g.outputs.push_back(oat::ValueInfo{name, c.dtype, std::nullopt});
  };
  output(c.y, "Y");
  output(c.y_h, "Y_h");
  if (c.op == "LSTM") output(c.y_c, "Y_c");
  while (!n.outputs.empty() && n.outputs.back().empty()) n.outputs.pop_back();
  g.nodes.push_back(n);
  return g;
}

// The expected outputs in the case's layout, in graph output order.
inline std::vector<std::pair<std::string, std::vector<double>>> expected(const Case& c,
                                                                         const Outputs& o) {
  const int64_t S = c.seq, N = c.batch, H = c.hidden, D = c.dirs();
  std::vector<std::pair<std::string, std::vector<double>>> r;
  auto st = [&](const std::vector<double>& v) {
    return c.layout == 0 ? v : transpose(v, {D, N, H}, {1, 0, 2});
  };
  if (c.y) r.push_back({"Y", c.layout == 0 ? o.Y : transpose(o.Y, {S, D, N, H}, {2, 0, 1, 3})});
  if (c.y_h) r.push_back({"Y_h", st(o.Yh)});
  if (c.op == "LSTM" && c.y_c) r.push_back({"Y_c", st(o.Yc)});
  return r;
}

}  // namespace oat_test::rnn
