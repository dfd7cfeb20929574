// Gradients of Conv and ConvTranspose: double-precision finite-difference checks over the
// attribute variants (strides, pads, dilations, groups, depthwise, auto_pad, 1-/2-/3-D), and the
// ConvGrad kernel against direct loops on shapes large enough to take its tiled, threaded paths.
#include <cmath>

#include "grad_check.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"
#include "runtime/registry.h"
#include "runtime/threads.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;

namespace {

Attribute ints(std::vector<int64_t> v) { return train::GradientContext::attr_ints(std::move(v)); }
Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

GradCheckCase conv(Shape x, Shape w, bool bias, std::map<std::string, Attribute> attrs = {},
                   const std::string& op = "Conv") {
  GradCheckCase c;
  c.op = op;
  c.attrs = std::move(attrs);
  c.inputs = {in(std::move(x)), in(w)};
  const int64_t group = c.attrs.count("group") ? c.attrs.at("group").i : 1;
  if (bias) c.inputs.push_back(in({op == "Conv" ? w[0] : w[1] * group}));
  return c;
}

}  // namespace

TEST_CASE("gradients: Conv 2-D with strides, pads, dilations") {
  SUBCASE("plain, with bias") { test::check_gradients(conv({2, 3, 5, 5}, {4, 3, 3, 3}, true)); }
  SUBCASE("one input channel, pads 1") {
    test::check_gradients(conv({2, 1, 9, 10}, {3, 1, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}));
  }
  SUBCASE("no bias, 1x1 pointwise") {
    test::check_gradients(conv({2, 4, 3, 3}, {5, 4, 1, 1}, false));
  }
  SUBCASE("strides 2, asymmetric pads") {
    test::check_gradients(conv({2, 2, 6, 7}, {3, 2, 3, 2}, true,
                               {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 1})}}));
  }
  SUBCASE("dilations 2, pads 2") {
    test::check_gradients(conv({1, 2, 7, 6}, {2, 2, 3, 3}, true,
                               {{"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}));
  }
  SUBCASE("1x1 with stride 2 (ResNet downsample)") {
    test::check_gradients(conv({2, 3, 5, 5}, {4, 3, 1, 1}, false, {{"strides", ints({2, 2})}}));
  }
  SUBCASE("auto_pad SAME_UPPER / SAME_LOWER with stride 2") {
    for (const char* mode : {"SAME_UPPER", "SAME_LOWER"})
      test::check_gradients(conv({1, 2, 5, 6}, {3, 2, 2, 3}, true,
                                 {{"auto_pad", str(mode)}, {"strides", ints({2, 2})}}));
  }
  SUBCASE("auto_pad VALID, kernel_shape given") {
    test::check_gradients(conv({2, 2, 5, 5}, {2, 2, 3, 3}, true,
                               {{"auto_pad", str("VALID")}, {"kernel_shape", ints({3, 3})}}));
  }
}

TEST_CASE("gradients: Conv groups and depthwise") {
  SUBCASE("group 2") {
    test::check_gradients(conv({2, 4, 5, 5}, {6, 2, 3, 3}, true, {{"group", int1(2)}}));
  }
  SUBCASE("depthwise, stride 2, pads 1") {
    test::check_gradients(
        conv({2, 3, 6, 6}, {3, 1, 3, 3}, true,
             {{"group", int1(3)}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}));
  }
  SUBCASE("depthwise with channel multiplier 2, dilations") {
    test::check_gradients(
        conv({1, 2, 7, 7}, {4, 1, 3, 3}, false, {{"group", int1(2)}, {"dilations", ints({2, 1})}}));
  }
}

TEST_CASE("gradients: Conv 1-D and 3-D") {
  SUBCASE("1-D, stride 2, pads") {
    test::check_gradients(
        conv({2, 3, 9}, {2, 3, 3}, true, {{"strides", ints({2})}, {"pads", ints({1, 2})}}));
  }
  SUBCASE("3-D, pads") {
    test::check_gradients(
        conv({1, 2, 4, 3, 4}, {2, 2, 2, 2, 3}, true, {{"pads", ints({1, 0, 1, 0, 1, 1})}}));
  }
  SUBCASE("3-D depthwise, stride 2") {
    test::check_gradients(conv({1, 2, 5, 4, 4}, {2, 1, 3, 2, 2}, true,
                               {{"group", int1(2)}, {"strides", ints({2, 1, 2})}}));
  }
}

TEST_CASE("gradients: Conv with a constant input computes only the wanted outputs") {
  // X is data (no gradient): the ConvGrad node gets no dX output, and dW, dB are still right.
  GradCheckCase c = conv({2, 3, 5, 5}, {2, 3, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}});
  std::mt19937 rng(7);
  c.inputs[0].differentiable = false;
  c.inputs[0].value = test::random_tensor({2, 3, 5, 5}, -1, 1, rng, {});
  test::check_gradients(c);
  // W constant: dX and dB only.
  c = conv({2, 3, 5, 5}, {2, 3, 3, 3}, true, {{"strides", ints({2, 2})}});
  c.inputs[1].differentiable = false;
  c.inputs[1].value = test::random_tensor({2, 3, 3, 3}, -1, 1, rng, {});
  test::check_gradients(c);
}

TEST_CASE("gradients: ConvTranspose") {
  const std::string op = "ConvTranspose";
  SUBCASE("plain") { test::check_gradients(conv({2, 3, 4, 4}, {3, 2, 3, 3}, true, {}, op)); }
  SUBCASE("strides 2, pads 1, output_padding 1") {
    test::check_gradients(conv(
        {1, 2, 3, 4}, {2, 3, 3, 3}, true,
        {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 0})}, {"output_padding", ints({1, 1})}},
        op));
  }
  SUBCASE("group 2, dilations") {
    test::check_gradients(conv({2, 4, 3, 3}, {4, 3, 2, 2}, true,
                               {{"group", int1(2)}, {"dilations", ints({2, 1})}}, op));
  }
  SUBCASE("output_shape and SAME_UPPER") {
    test::check_gradients(conv({1, 2, 3, 3}, {2, 2, 3, 3}, true,
                               {{"strides", ints({2, 2})}, {"output_shape", ints({7, 6})}}, op));
    test::check_gradients(conv({1, 2, 3, 3}, {2, 2, 3, 3}, false,
                               {{"strides", ints({2, 2})}, {"auto_pad", str("SAME_UPPER")}}, op));
  }
  SUBCASE("1-D pointwise and 3-D") {
    test::check_gradients(conv({2, 3, 5}, {3, 2, 1}, true, {}, op));
    test::check_gradients(
        conv({1, 2, 2, 3, 2}, {2, 1, 2, 2, 2}, true, {{"strides", ints({1, 2, 2})}}, op));
  }
}

// ---- ConvGrad against direct loops -----------------------------------------------------------

namespace {

struct ConvGeom {
  int64_t N, C, H, W, M, KH, KW, group = 1, stride = 1, pad = 0, dil = 1;
  int64_t OH() const { return (H + 2 * pad - (KH - 1) * dil - 1) / stride + 1; }
  int64_t OW() const { return (W + 2 * pad - (KW - 1) * dil - 1) / stride + 1; }
};

// dX, dW, dB of a 2-D Conv by the definition, in double.
void direct_conv_grad(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& w,
                      const std::vector<double>& dy, std::vector<double>& dx,
                      std::vector<double>& dw, std::vector<double>& db) {
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group, OH = g.OH(), OW = g.OW();
  dx.assign(g.N * g.C * g.H * g.W, 0);
  dw.assign(g.M * Cg * g.KH * g.KW, 0);
  db.assign(g.M, 0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const double d = dy[((n * g.M + m) * OH + oy) * OW + ox];
          db[m] += d;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < g.KH; ++i)
              for (int64_t j = 0; j < g.KW; ++j) {
                const int64_t iy = oy * g.stride - g.pad + i * g.dil;
                const int64_t ix = ox * g.stride - g.pad + j * g.dil;
                if (iy < 0 || iy >= g.H || ix < 0 || ix >= g.W) continue;
                const int64_t xi = ((n * g.C + (m / Mg) * Cg + c) * g.H + iy) * g.W + ix;
                const int64_t wi = ((m * Cg + c) * g.KH + i) * g.KW + j;
                dw[wi] += d * x[xi];
                dx[xi] += d * w[wi];
              }
        }
}

void check_conv_grad_kernel(const ConvGeom& g, DType dtype) {
  std::mt19937 rng(11);
  const int64_t Cg = g.C / g.group;
  Tensor x = test::random_tensor({g.N, g.C, g.H, g.W}, -1, 1, rng, {});
  Tensor w = test::random_tensor({g.M, Cg, g.KH, g.KW}, -1, 1, rng, {});
  Tensor dy = test::random_tensor({g.N, g.M, g.OH(), g.OW()}, -1, 1, rng, {});
  std::vector<double> dx, dw, db;
  auto vec = [](const Tensor& t) {
    return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
  };
  direct_conv_grad(g, vec(x), vec(w), vec(dy), dx, dw, db);

  Node n;
  n.name = "conv_grad";
  n.op_type = "ConvGrad";
  n.op = OpId::ConvGrad;
  n.domain = kInternalDomain;
  n.opset = 1;
  n.attrs["group"] = int1(g.group);
  n.attrs["strides"] = ints({g.stride, g.stride});
  n.attrs["pads"] = ints({g.pad, g.pad, g.pad, g.pad});
  n.attrs["dilations"] = ints({g.dil, g.dil});
  n.inputs = {"dy", "x", "w"};
  n.outputs = {"dx", "dw", "db"};
  auto kernel = default_registry().create(n, Device::CPU, dtype);
  Tensor xc = cast_tensor(x, dtype), wc = cast_tensor(w, dtype), dyc = cast_tensor(dy, dtype);
  std::vector<Tensor> outs(3);
  KernelContext ctx(n, {&dyc, &xc, &wc}, &outs, Device::CPU);
  kernel->compute(ctx);
  const double tol = dtype == DType::F64 ? 1e-10 : 1e-3;
  auto compare = [&](const Tensor& got, const std::vector<double>& want, const char* what) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, std::abs(got.item_as_double(i) - want[i]) / (1 + std::abs(want[i])));
    INFO(what, " N=", g.N, " C=", g.C, " M=", g.M, " group=", g.group, " stride=", g.stride, " ",
         dtype_name(dtype));
    CHECK(worst < tol);
  };
  compare(outs[0], dx, "dX");
  compare(outs[1], dw, "dW");
  compare(outs[2], db, "dB");
}

}  // namespace

TEST_CASE("ConvGrad matches direct loops on tiled and threaded paths") {
  const int threads = num_threads();
  for (int t : {threads, 1}) {
    set_num_threads(t);
    for (DType dt : {DType::F64, DType::F32}) {
      // One image, positions in several tiles (K + Mg = 216: 1213-wide tiles over 1600).
      check_conv_grad_kernel({1, 8, 40, 40, 16, 5, 5, 1, 1, 2, 1}, dt);
      // Several images per task, a short last task (LeNet's second conv, batch 7).
      check_conv_grad_kernel({7, 6, 14, 14, 16, 5, 5}, dt);
      // Groups, stride 2, pads, dilations.
      check_conv_grad_kernel({3, 8, 36, 36, 12, 3, 3, 2, 2, 2, 2}, dt);
      // Pointwise: X is its own column matrix.
      check_conv_grad_kernel({5, 16, 9, 9, 8, 1, 1}, dt);
      // More than 32 output channels: dW = D·colᵀ and dcol = W_gᵀ·D on gemm_packed.h (float),
      // widths with N mod 16 tails; one image, several per task, pointwise.
      check_conv_grad_kernel({1, 4, 30, 30, 48, 3, 3, 1, 2, 1}, dt);
      check_conv_grad_kernel({5, 8, 9, 9, 40, 3, 3, 1, 1, 1}, dt);
      check_conv_grad_kernel({3, 40, 6, 6, 36, 1, 1}, dt);
      // 3x3, stride 1, 16+ channels: dX by Winograd (a conv of dY with W flipped), pads 0-2,
      // odd sizes; dW still by the GEMM.
      check_conv_grad_kernel({3, 16, 9, 10, 20, 3, 3, 1, 1, 1}, dt);
      check_conv_grad_kernel({2, 24, 8, 11, 16, 3, 3, 1, 1, 0}, dt);
      check_conv_grad_kernel({2, 17, 6, 7, 32, 3, 3, 1, 1, 2}, dt);
      // Depthwise.
      check_conv_grad_kernel({4, 6, 11, 11, 12, 3, 3, 6, 2, 1}, dt);
      // One input channel: direct dW (grad_conv_direct.h), LeNet's first conv and rows wider
      // than one 32-column block.
      check_conv_grad_kernel({5, 1, 28, 28, 6, 5, 5, 1, 1, 2}, dt);
      check_conv_grad_kernel({3, 1, 12, 41, 4, 3, 3, 1, 1, 1}, dt);
      // A kernel row of 11 taps: several tap groups (direct_taps, 8 or fewer at a time).
      check_conv_grad_kernel({2, 1, 10, 30, 3, 3, 11, 1, 1, 2}, dt);
    }
  }
  set_num_threads(threads);
}

TEST_CASE("im2col_image and col2im_image agree with im2col and col2im_range") {
  // Random 3-D geometries (strides, dilations, pads, kernels larger than the input's padding),
  // with a column stride larger than the positions, as the multi-image tiles use.
  std::mt19937 rng(3);
  for (int it = 0; it < 500; ++it) {
    cpu::Window3 w;
    w.nd = 3;
    for (int s = 0; s < 3; ++s) {
      w.k[s] = 1 + rng() % 3;
      w.stride[s] = 1 + rng() % 3;
      w.dil[s] = 1 + rng() % 2;
      w.pad[s] = w.pad_end[s] = rng() % 3;
      const int64_t dk = (w.k[s] - 1) * w.dil[s] + 1;
      w.in[s] = std::max<int64_t>(1 + rng() % 7, dk - 2 * w.pad[s]);
      w.out[s] = (w.in[s] + 2 * w.pad[s] - dk) / w.stride[s] + 1;
    }
    const int64_t C = 1 + rng() % 3, P = w.out_size(), K = C * w.k_size(), ld = P + rng() % 5;
    std::vector<double> x(static_cast<size_t>(C * w.in_size()));
    for (auto& v : x) v = static_cast<double>(rng() % 1000);
    std::vector<double> a(static_cast<size_t>(K * ld), -1), b(a);
    cpu::im2col_image(x.data(), C, w, a.data(), ld, false);
    cpu::im2col(x.data(), C, w, 0, P, b.data(), ld, false);
    bool same = true;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p) same &= a[k * ld + p] == b[k * ld + p];
    REQUIRE(same);
    std::vector<double> ya(x.size(), 0), yb(x.size(), 0);
    cpu::col2im_image(a.data(), ld, C, w, ya.data(), false);
    cpu::col2im_range(a.data(), ld, C, w, 0, P, yb.data(), false);
    REQUIRE(ya == yb);
    // Adjointness: <im2col(x), col> == <x, col2im(col)> with col = im2col(x).
    double lhs = 0, rhs = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p) lhs += a[k * ld + p] * a[k * ld + p];
    for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * ya[i];
    REQUIRE(lhs == doctest::Approx(rhs));
  }
}
