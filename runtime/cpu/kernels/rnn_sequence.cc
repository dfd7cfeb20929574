// LSTMSequence and GRUSequence (internal domain): a whole LSTM's or GRU's recurrence in one CPU
// kernel, what the CPU Executor's lowering of an F32 LSTM or GRU uses instead of the unrolled
// expansion when the graph only runs forward (runtime/composite.h,
// LoweringOptions::cpu_inference; runtime/composite/rnn.cc decides which qualify: default
// activations, no sequence_lens). G = 4 (LSTM: gates i, o, f, c) or 3 (GRU: z, r, h).
//
//   inputs   XW [seq, batch, dirs·G·H]  X·Wᵀ for every step, both directions side by side (one
//                                       MatMul before this node; no bias)
//            Rt [dirs, H, G·H]          Rᵀ per direction (a Transpose of the weight, which the
//                                       Executor's constant folding runs once)
//            B [dirs, 2·G·H]?  initial_h [dirs, batch, H]?
//            LSTM also initial_c [dirs, batch, H]?  P [dirs, 3H]?   (as the ONNX ops')
//   attrs    direction (forward | reverse | bidirectional: direction 1 runs backwards),
//            clip (absent: none); LSTM input_forget; GRU linear_before_reset
//   outputs  Y [seq, dirs, batch, H], Y_h [dirs, batch, H]; LSTM also Y_c [dirs, batch, H]
//
// LSTM, per step t (in processing order) and direction, g = XW[t] + Wb + Rb + H_{t-1}·Rt:
//   i = σ(clip(g_i + Pi ⊙ C_{t-1}))      f = σ(clip(g_f + Pf ⊙ C_{t-1}))   (1 − i: input_forget)
//   c = tanh(clip(g_c))                  C_t = f ⊙ C_{t-1} + i ⊙ c
//   o = σ(clip(g_o + Po ⊙ C_t))          H_t = o ⊙ tanh(C_t)
// GRU, g = XW[t] + Wb:
//   z = σ(clip(g_z + Rbz + H_{t-1}·Rzᵀ))     r = σ(clip(g_r + Rbr + H_{t-1}·Rrᵀ))
//   h = tanh(clip(g_h + Rbh + (r ⊙ H_{t-1})·Rhᵀ))       linear_before_reset = 0
//   h = tanh(clip(g_h + r ⊙ (H_{t-1}·Rhᵀ + Rbh)))       linear_before_reset = 1
//   H_t = h + z ⊙ (H_{t-1} − h)
// the formulas of the unrolled cells (rnn_cells.cc), with σ(x) = 1 / (1 + e⁻ˣ) as the Sigmoid
// kernel computes it. A zero initial state leaves its terms out.
//
// Why a kernel: unrolled, every step is ~12 nodes on [batch, G·H] tensors, and the recurrent
// product of one step (8 x 256 x 1024 in bench/lstm_bench) is too small to share between threads.
// Batch rows and directions are independent chains, so here each thread runs whole chains (one
// direction, a block of rows) through every step, with no synchronisation between steps.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/kernels/gemm_split.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {

namespace {

using Arr = Eigen::Map<Eigen::ArrayXf>;

void sigmoid(float* x, int64_t n) {
  Arr a(x, n);
  a = (1.0f + (-a).exp()).inverse();
}
void tanh_inplace(float* x, int64_t n) {
  Arr a(x, n);
  a = a.tanh();
}
void clamp(float* x, int64_t n, float c) {
  Arr a(x, n);
  a = a.max(-c).min(c);
}

struct SeqArgs {
  int64_t seq = 0, batch = 0, dirs = 1, H = 0;
  bool reverse_first = false;  // direction "reverse": direction 0 runs backwards
  bool clip = false, input_forget = false, linear_before_reset = false;
  float clip_value = 0.0f;
  const float *xw = nullptr, *rt = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr,
              *p = nullptr;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
};

// g[M, G] = XW[t] rows r0.. of direction d (G columns of the dirs·G) + bias.
void load_step(const SeqArgs& a, int64_t t, int64_t d, int64_t r0, int64_t M, int64_t G,
               const float* bias, float* g) {
  const int64_t ld_xw = a.dirs * G;
  const float* xw = a.xw + (t * a.batch + r0) * ld_xw + d * G;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < G; ++j) g[r * G + j] = xw[r * ld_xw + j] + bias[j];
}

// LSTM: direction d, batch rows [r0, r0 + M), every step.
void lstm_chain(const SeqArgs& a, int64_t d, int64_t r0, int64_t M) {
  const int64_t H = a.H, G = 4 * H;
  const bool reverse = d == 1 || a.reverse_first;
  std::vector<float> bias(static_cast<size_t>(G), 0.0f);
  if (a.b)
    for (int64_t j = 0; j < G; ++j) bias[j] = a.b[d * 2 * G + j] + a.b[d * 2 * G + G + j];
  const float* rt = a.rt + d * H * G;
  const float* Pi = a.p ? a.p + d * 3 * H : nullptr;
  const float* Po = a.p ? Pi + H : nullptr;
  const float* Pf = a.p ? Pi + 2 * H : nullptr;
  std::vector<float> g(static_cast<size_t>(M * G)), C(static_cast<size_t>(M * H), 0.0f),
      tc(static_cast<size_t>(H));
  if (a.c0) std::copy_n(a.c0 + (d * a.batch + r0) * H, M * H, C.data());
  bool have_c = a.c0 != nullptr;
  const float* h_prev = a.h0 ? a.h0 + (d * a.batch + r0) * H : nullptr;
  for (int64_t k = 0; k < a.seq; ++k) {
    const int64_t t = reverse ? a.seq - 1 - k : k;
    load_step(a, t, d, r0, M, G, bias.data(), g.data());
    if (h_prev) row_major_gemm<float>(h_prev, false, rt, false, g.data(), M, G, H, 1.0f, true);
    float* h_out = a.y + ((t * a.dirs + d) * a.batch + r0) * H;
    for (int64_t r = 0; r < M; ++r) {
      float *gi = g.data() + r * G, *go = gi + H, *gf = gi + 2 * H, *gc = gi + 3 * H;
      float* c = C.data() + r * H;
      if (Pi && have_c)
        for (int64_t j = 0; j < H; ++j) {
          gi[j] += Pi[j] * c[j];
          gf[j] += Pf[j] * c[j];
        }
      if (a.clip && !Po) clamp(gi, G, a.clip_value);
      if (a.clip && Po) {  // o's pre-activation waits for C_t
        clamp(gi, H, a.clip_value);
        clamp(gf, 2 * H, a.clip_value);  // f and c
      }
      sigmoid(gi, H);
      if (!Po) sigmoid(go, H);
      if (!a.input_forget) sigmoid(gf, H);
      tanh_inplace(gc, H);
      if (!have_c) {
        for (int64_t j = 0; j < H; ++j) c[j] = gi[j] * gc[j];
      } else if (a.input_forget) {
        for (int64_t j = 0; j < H; ++j) c[j] += gi[j] * (gc[j] - c[j]);
      } else {
        for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
      }
      if (Po) {
        for (int64_t j = 0; j < H; ++j) go[j] += Po[j] * c[j];
        if (a.clip) clamp(go, H, a.clip_value);
        sigmoid(go, H);
      }
      std::copy_n(c, H, tc.data());
      tanh_inplace(tc.data(), H);
      float* h = h_out + r * H;
      for (int64_t j = 0; j < H; ++j) h[j] = go[j] * tc[j];
    }
    have_c = true;
    h_prev = h_out;  // rows r0.. of Y[t, d]: [M, H], contiguous
  }
  if (a.yh) std::copy_n(h_prev, M * H, a.yh + (d * a.batch + r0) * H);
  if (a.yc) std::copy_n(C.data(), M * H, a.yc + (d * a.batch + r0) * H);
}

// GRU: direction d, batch rows [r0, r0 + M), every step.
void gru_chain(const SeqArgs& a, int64_t d, int64_t r0, int64_t M) {
  const int64_t H = a.H, G = 3 * H;
  const bool reverse = d == 1 || a.reverse_first, lbr = a.linear_before_reset;
  // z and r take Wb + Rb; h takes Wbh, and Rbh too unless it waits inside r ⊙ (·) (lbr = 1).
  std::vector<float> bias(static_cast<size_t>(G), 0.0f), rbh(static_cast<size_t>(H), 0.0f);
  if (a.b) {
    const float *wb = a.b + d * 2 * G, *rb = wb + G;
    for (int64_t j = 0; j < 2 * H; ++j) bias[j] = wb[j] + rb[j];
    for (int64_t j = 0; j < H; ++j) {
      bias[2 * H + j] = wb[2 * H + j] + (lbr ? 0.0f : rb[2 * H + j]);
      rbh[j] = rb[2 * H + j];
    }
  }
  const float* rt = a.rt + d * H * G;
  // linear_before_reset = 0: Rt's columns [0, 2H) and [2H, 3H) are two different products.
  std::vector<float> rt_zr, rt_h;
  if (!lbr) {
    rt_zr.resize(static_cast<size_t>(H * 2 * H));
    rt_h.resize(static_cast<size_t>(H * H));
    for (int64_t k = 0; k < H; ++k) {
      std::copy_n(rt + k * G, 2 * H, rt_zr.data() + k * 2 * H);
      std::copy_n(rt + k * G + 2 * H, H, rt_h.data() + k * H);
    }
  }
  const int64_t ld_hr = lbr ? G : 2 * H;
  std::vector<float> g(static_cast<size_t>(M * G)), hr(static_cast<size_t>(M * ld_hr)),
      rh(lbr ? 0 : static_cast<size_t>(M * H)), rhr(lbr ? 0 : static_cast<size_t>(M * H));
  const float* h_prev = a.h0 ? a.h0 + (d * a.batch + r0) * H : nullptr;
  for (int64_t k = 0; k < a.seq; ++k) {
    const int64_t t = reverse ? a.seq - 1 - k : k;
    load_step(a, t, d, r0, M, G, bias.data(), g.data());
    if (h_prev)
      row_major_gemm<float>(h_prev, false, lbr ? rt : rt_zr.data(), false, hr.data(), M, ld_hr, H,
                            1.0f, false);
    for (int64_t r = 0; r < M; ++r) {  // z, r
      float* gz = g.data() + r * G;
      if (h_prev)
        for (int64_t j = 0; j < 2 * H; ++j) gz[j] += hr[r * ld_hr + j];
      if (a.clip) clamp(gz, 2 * H, a.clip_value);
      sigmoid(gz, 2 * H);
    }
    if (lbr) {  // h_pre += r ⊙ (H_{t-1}·Rhᵀ + Rbh)
      for (int64_t r = 0; r < M; ++r) {
        float *gr = g.data() + r * G + H, *gh = gr + H;
        const float* hrh = hr.data() + r * G + 2 * H;
        for (int64_t j = 0; j < H; ++j) gh[j] += gr[j] * ((h_prev ? hrh[j] : 0.0f) + rbh[j]);
      }
    } else if (h_prev) {  // h_pre += (r ⊙ H_{t-1})·Rhᵀ
      for (int64_t r = 0; r < M; ++r)
        for (int64_t j = 0; j < H; ++j) rh[r * H + j] = g[r * G + H + j] * h_prev[r * H + j];
      row_major_gemm<float>(rh.data(), false, rt_h.data(), false, rhr.data(), M, H, H, 1.0f, false);
      for (int64_t r = 0; r < M; ++r)
        for (int64_t j = 0; j < H; ++j) g[r * G + 2 * H + j] += rhr[r * H + j];
    }
    float* h_out = a.y + ((t * a.dirs + d) * a.batch + r0) * H;
    for (int64_t r = 0; r < M; ++r) {
      float *gz = g.data() + r * G, *gh = gz + 2 * H;
      if (a.clip) clamp(gh, H, a.clip_value);
      tanh_inplace(gh, H);
      float* h = h_out + r * H;
      if (h_prev) {
        const float* hp = h_prev + r * H;
        for (int64_t j = 0; j < H; ++j) h[j] = gh[j] + gz[j] * (hp[j] - gh[j]);
      } else {
        for (int64_t j = 0; j < H; ++j) h[j] = gh[j] - gz[j] * gh[j];
      }
    }
    h_prev = h_out;
  }
  if (a.yh) std::copy_n(h_prev, M * H, a.yh + (d * a.batch + r0) * H);
}

// LSTMSequence (lstm) or GRUSequence: the checks, the outputs and the chains over threads.
void sequence_kernel(KernelContext& ctx, bool lstm) {
  const Node& n = ctx.node();
  const Tensor& xw = ctx.input(0);
  const Tensor& rt = ctx.input(1);
  if (xw.rank() != 3 || rt.rank() != 3)
    ctx.fail(cat("XW must be [seq, batch, dirs·G·H] and Rt [dirs, H, G·H], got ",
                 shape_str(xw.shape()), " and ", shape_str(rt.shape())));
  SeqArgs a;
  a.seq = xw.dim(0), a.batch = xw.dim(1), a.dirs = rt.dim(0), a.H = rt.dim(1);
  if (a.seq < 1) ctx.fail(cat("XW ", shape_str(xw.shape()), " has no steps"));
  const int64_t G = (lstm ? 4 : 3) * a.H;
  const std::string direction = n.attr_string("direction", "forward");
  if ((a.dirs == 2) != (direction == "bidirectional") || a.dirs < 1 || a.dirs > 2)
    ctx.fail(cat("direction '", direction, "' does not fit ", a.dirs, " direction(s) in Rt"));
  if (rt.dim(2) != G || xw.dim(2) != a.dirs * G)
    ctx.fail(cat("XW ", shape_str(xw.shape()), " and Rt ", shape_str(rt.shape()),
                 " do not fit: expected Rt [dirs, H, ", lstm ? 4 : 3,
                 "H] and XW [seq, batch, dirs·", lstm ? 4 : 3, "H]"));
  auto optional = [&](int i, const char* name, Shape want) -> const float* {
    const Tensor* t = ctx.input_or_null(i);
    if (!t) return nullptr;
    if (t->shape() != want)
      ctx.fail(cat(name, " has shape ", shape_str(t->shape()), ", expected ", shape_str(want)));
    return t->data<float>();
  };
  a.b = optional(2, "B", {a.dirs, 2 * G});
  a.h0 = optional(3, "initial_h", {a.dirs, a.batch, a.H});
  if (lstm) {
    a.c0 = optional(4, "initial_c", {a.dirs, a.batch, a.H});
    a.p = optional(5, "P", {a.dirs, 3 * a.H});
  }
  a.reverse_first = direction == "reverse";
  a.clip = n.has_attr("clip");
  a.clip_value = n.attr_float("clip", 0.0f);
  a.input_forget = lstm && n.attr_int("input_forget", 0) != 0;
  a.linear_before_reset = !lstm && n.attr_int("linear_before_reset", 0) != 0;
  a.xw = xw.data<float>();
  a.rt = rt.data<float>();
  a.y = ctx.allocate_output(0, DType::F32, {a.seq, a.dirs, a.batch, a.H}).data<float>();
  if (ctx.output_requested(1))
    a.yh = ctx.allocate_output(1, DType::F32, {a.dirs, a.batch, a.H}).data<float>();
  if (lstm && ctx.output_requested(2))
    a.yc = ctx.allocate_output(2, DType::F32, {a.dirs, a.batch, a.H}).data<float>();
  if (a.batch == 0 || a.H == 0) {  // nothing to run; a zero-size state is its own final value
    return;
  }

  // Chains: each direction's batch rows in `blocks` blocks, at least 2 rows each (the few-row
  // GEMM's minimum), one per thread; threaded only with 2^22 multiply-adds per chain in all.
  const int64_t threads = num_threads();
  const int64_t work = a.seq * a.batch * G * a.H;  // multiply-adds of one direction's products
  int64_t blocks = std::max<int64_t>(1, std::min(threads / a.dirs, a.batch / 2));
  while (blocks > 1 && work / blocks < (int64_t{1} << 22)) --blocks;
  const int64_t chains = a.dirs * blocks;
  const bool parallel = chains > 1 && a.dirs * work >= (int64_t{1} << 22);
#pragma omp parallel for schedule(static) \
    num_threads(static_cast <int>(std::min(chains, threads))) if (parallel)
  for (int64_t q = 0; q < chains; ++q) {
    const int64_t d = q / blocks, k = q % blocks;
    const int64_t r0 = a.batch * k / blocks, r1 = a.batch * (k + 1) / blocks;
    if (lstm)
      lstm_chain(a, d, r0, r1 - r0);
    else
      gru_chain(a, d, r0, r1 - r0);
  }
}

}  // namespace

void register_rnn_sequence(KernelRegistry& r) {
  r.add(OpId::LSTMSequence, Device::CPU, DType::F32,
        function_kernel([](KernelContext& ctx) { sequence_kernel(ctx, true); }));
  r.add(OpId::GRUSequence, Device::CPU, DType::F32,
        function_kernel([](KernelContext& ctx) { sequence_kernel(ctx, false); }));
}

}  // namespace oat::cpu
