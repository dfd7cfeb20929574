// Conv and ConvTranspose (runtime/cpu/kernels/conv*.cc) against direct loops written from the
// ONNX definitions, over the attribute space: 1-/2-/3-D, groups, depthwise, strides, pads,
// dilations, auto_pad, output_padding/output_shape, bias or none, one and two threads (the two
// parallel strategies), float32 and float64. Plus hand-computed cases and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/threads.h"
#include "single_node.h"

using namespace oat;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_s;

namespace {

// Runs one opset-13 node; an undefined tensor is an omitted optional input.
Tensor run_op(const std::string& op, const std::map<std::string, Attribute>& attrs,
              const std::vector<Tensor>& inputs) {
  return oat_test::run1(op, 13, attrs, inputs);
}

template <class T>
Tensor random_tensor(Shape shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor t(dtype_of<T>(), std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(u(rng));
  return t;
}

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> r(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) r[i] = r[i + 1] * s[i + 1];
  return r;
}

// Calls f(index vector) for every index of `shape`.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  if (numel(shape) == 0) return;
  while (true) {
    f(idx);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

struct ConvCase {
  std::string name;
  Shape x;  // N, C, spatial...
  int64_t m;
  std::vector<int64_t> k;
  int64_t group = 1;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {};
  std::string auto_pad = {};
  bool bias = true;
};

// Resolved begin pads and output size along each spatial axis (ONNX's formulas).
void conv_geometry(const ConvCase& c, std::vector<int64_t>* pb, Shape* out) {
  const size_t nd = c.k.size();
  pb->assign(nd, 0);
  out->clear();
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = c.x[2 + i], s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t d = c.dilations.empty() ? 1 : c.dilations[i], dk = (c.k[i] - 1) * d + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t o = (in + s - 1) / s, total = std::max<int64_t>(0, (o - 1) * s + dk - in);
      (*pb)[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      out->push_back(o);
    } else if (c.auto_pad == "VALID") {
      out->push_back((in - dk) / s + 1);
    } else {
      const int64_t b = c.pads.empty() ? 0 : c.pads[i], e = c.pads.empty() ? 0 : c.pads[nd + i];
      (*pb)[i] = b;
      out->push_back((in + b + e - dk) / s + 1);
    }
  }
}

// Y[n, m, o] = B[m] + Σ_{c, t} W[m, c, t] · X[n, g·Cg + c, o·s - pad + t·d]   (in double)
template <class T>
Tensor reference_conv(const ConvCase& c, const Tensor& X, const Tensor& W, const Tensor* B) {
  std::vector<int64_t> pb;
  Shape osp;
  conv_geometry(c, &pb, &osp);
  const size_t nd = c.k.size();
  const int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, Mg = c.m / G;
  Shape yshape = {N, c.m};
  yshape.insert(yshape.end(), osp.begin(), osp.end());
  Tensor Y(dtype_of<T>(), yshape);
  const auto xs = strides_of(X.shape()), ws = strides_of(W.shape());
  Shape kshape(c.k.begin(), c.k.end());
  int64_t yi = 0;
  for_each_index(yshape, [&](const std::vector<int64_t>& o) {
    const int64_t n = o[0], m = o[1], g = m / Mg;
    double acc = B ? static_cast<double>(B->data<T>()[m]) : 0.0;
    for (int64_t cc = 0; cc < Cg; ++cc)
      for_each_index(kshape, [&](const std::vector<int64_t>& t) {
        int64_t xo = n * xs[0] + (g * Cg + cc) * xs[1];
        int64_t wo = m * ws[0] + cc * ws[1];
        for (size_t i = 0; i < nd; ++i) {
          const int64_t s = c.strides.empty() ? 1 : c.strides[i];
          const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
          const int64_t pos = o[2 + i] * s - pb[i] + t[i] * d;
          if (pos < 0 || pos >= c.x[2 + i]) return;
          xo += pos * xs[2 + i];
          wo += t[i] * ws[2 + i];
        }
        acc += static_cast<double>(X.data<T>()[xo]) * static_cast<double>(W.data<T>()[wo]);
      });
    Y.data<T>()[yi++] = static_cast<T>(acc);
  });
  return Y;
}

template <class T>
void check_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got.data<T>()[i]) -
                                     static_cast<double>(want.data<T>()[i])));
  CHECK(worst <= tol);
}

std::map<std::string, Attribute> conv_attrs(const ConvCase& c) {
  std::map<std::string, Attribute> a;
  if (c.group != 1) a["group"] = attr_i(c.group);
  if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
  if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
  if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
  if (!c.auto_pad.empty()) a["auto_pad"] = attr_s(c.auto_pad);
  return a;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"2d 3x3 pad 1", {2, 3, 9, 8}, 4, {3, 3}, 1, {}, {1, 1, 1, 1}, {}, "", true},
      {"2d stride 2 asymmetric pads", {3, 4, 11, 7}, 5, {3, 2}, 1, {2, 2}, {1, 0, 2, 1}, {}, ""},
      {"2d dilated", {2, 2, 10, 10}, 3, {3, 3}, 1, {1, 2}, {2, 2, 2, 2}, {2, 3}, ""},
      {"2d no bias", {1, 3, 6, 6}, 2, {2, 2}, 1, {}, {}, {}, "", false},
      {"2d groups", {2, 6, 7, 7}, 4, {3, 3}, 2, {}, {1, 1, 1, 1}, {}, ""},
      {"2d depthwise", {3, 5, 8, 9}, 5, {3, 3}, 5, {2, 1}, {1, 1, 1, 1}, {}, ""},
      {"2d depthwise x2 dilated", {2, 3, 9, 9}, 6, {3, 3}, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, ""},
      {"2d pointwise", {4, 6, 5, 7}, 3, {1, 1}, 1, {}, {}, {}, ""},
      {"2d pointwise stride 2", {3, 6, 7, 7}, 8, {1, 1}, 1, {2, 2}, {}, {}, ""},
      {"2d pointwise groups", {2, 8, 4, 4}, 6, {1, 1}, 2, {}, {}, {}, "", false},
      {"2d SAME_UPPER stride 2", {2, 3, 7, 8}, 2, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
      {"2d SAME_LOWER", {1, 2, 6, 5}, 3, {4, 2}, 1, {}, {}, {}, "SAME_LOWER"},
      {"2d VALID", {2, 2, 7, 6}, 2, {3, 3}, 1, {2, 1}, {}, {}, "VALID"},
      {"2d many small images", {20, 4, 3, 3}, 5, {3, 3}, 1, {}, {1, 1, 1, 1}, {}, ""},
      // One input channel, rows >= 8 wide: direct register blocks (conv_direct.h).
      {"2d one channel (LeNet conv1)", {5, 1, 28, 28}, 6, {5, 5}, 1, {}, {2, 2, 2, 2}, {}, ""},
      {"2d one channel, 2 row blocks, y stride and dilation",
       {3, 1, 9, 45},
       4,
       {3, 4},
       1,
       {2, 1},
       {1, 2, 0, 1},
       {2, 1},
       "",
       false},
      // Output channels in register groups (direct_register_group: 8, 3 or 1 a group).
      {"2d one channel, 13 output channels",
       {2, 1, 12, 10},
       13,
       {3, 3},
       1,
       {},
       {1, 1, 1, 1},
       {},
       ""},
      {"2d one channel, one output channel", {2, 1, 8, 12}, 1, {2, 3}, 1, {}, {}, {}, ""},
      {"2d kernel > input, pads", {1, 2, 2, 3}, 2, {4, 4}, 1, {}, {2, 2, 2, 2}, {}, ""},
      // 3x3 stride-1 convs with >= 16 channels take the Winograd path (conv_winograd.h).
      {"winograd pads 1", {3, 16, 9, 7}, 16, {3, 3}, 1, {}, {1, 1, 1, 1}, {}, ""},
      {"winograd asymmetric pads", {2, 20, 8, 11}, 17, {3, 3}, 1, {}, {0, 2, 1, 0}, {}, ""},
      {"winograd no pads no bias", {1, 16, 10, 6}, 24, {3, 3}, 1, {}, {}, {}, "", false},
      {"winograd many images", {17, 16, 4, 5}, 16, {3, 3}, 1, {}, {}, {}, "SAME_UPPER"},
      // The filter transform runs 16 input channels at a time: two whole groups and a tail of 8.
      {"winograd 40 channels", {2, 40, 6, 7}, 33, {3, 3}, 1, {}, {1, 1, 1, 1}, {}, ""},
      // More than 32 output channels: gemm_packed.h (float), with an N mod 16 tail.
      {"packed GEMM, one image in column tiles", {1, 3, 30, 30}, 40, {5, 5}, 1, {2, 2},
       {2, 2, 2, 2}, {}, ""},
      {"packed GEMM, images side by side", {6, 8, 5, 5}, 36, {3, 3}, 1, {2, 2}, {1, 1, 1, 1}, {},
       ""},
      {"packed GEMM, pointwise", {3, 16, 7, 7}, 48, {1, 1}, 1, {}, {}, {}, ""},
      {"1d", {3, 4, 17}, 6, {5}, 1, {2}, {2, 1}, {}, ""},
      {"1d groups dilated", {2, 4, 12}, 4, {3}, 2, {}, {1, 1}, {3}, ""},
      {"1d one channel", {2, 1, 20}, 3, {3}, 1, {}, {1, 2}, {}, ""},
      {"3d", {2, 3, 5, 6, 4}, 4, {3, 3, 2}, 1, {1, 2, 1}, {1, 1, 0, 1, 1, 1}, {}, ""},
      {"3d depthwise", {1, 4, 4, 5, 6}, 4, {2, 3, 3}, 4, {}, {0, 1, 1, 1, 1, 1}, {}, ""},
      {"3d pointwise", {2, 4, 3, 3, 3}, 5, {1, 1, 1}, 1, {}, {}, {}, ""},
  };
  return cases;
}

template <class T>
void run_conv_cases(double tol) {
  std::mt19937 rng(42);
  for (const ConvCase& c : conv_cases()) {
    Shape wshape = {c.m, c.x[1] / c.group};
    wshape.insert(wshape.end(), c.k.begin(), c.k.end());
    Tensor X = random_tensor<T>(c.x, rng), W = random_tensor<T>(wshape, rng);
    Tensor B = c.bias ? random_tensor<T>({c.m}, rng) : Tensor();
    const Tensor want = reference_conv<T>(c, X, W, c.bias ? &B : nullptr);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      check_close<T>(run_op("Conv", conv_attrs(c), {X, W, B}), want, tol,
                     c.name + " threads=" + std::to_string(threads));
    }
  }
  set_num_threads(0);
}

}  // namespace

TEST_CASE("Conv: hand-computed 2-D case") {
  // X = 0..15 as 4x4, W = ones 2x2, stride 2, B = 10: each output is 10 + the sum of a 2x2 block.
  Tensor X(DType::F32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) X.data<float>()[i] = static_cast<float>(i);
  Tensor W = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor B = Tensor::from_vector<float>({1}, {10});
  Tensor Y = run_op("Conv", {{"strides", attr_ints({2, 2})}}, {X, W, B});
  CHECK(Y.shape() == Shape{1, 1, 2, 2});
  CHECK(Y.to_float_vector() == std::vector<float>{20, 28, 52, 60});
  // kernel_shape given explicitly, matching W.
  Tensor Y2 = run_op("Conv", {{"strides", attr_ints({2, 2})}, {"kernel_shape", attr_ints({2, 2})}},
                     {X, W, B});
  CHECK(Y2.to_float_vector() == std::vector<float>{20, 28, 52, 60});
}

TEST_CASE("Conv matches the direct definition (float32)") { run_conv_cases<float>(1e-4); }

TEST_CASE("Conv matches the direct definition (float64)") { run_conv_cases<double>(1e-11); }

TEST_CASE("Conv keeps Winograd's filters of a constant W, and not of a fed one") {
  // 3x3, stride 1, 16 channels: the Winograd path. W is an initializer; a run that feeds W
  // another value must use that value (no kept filters), and the next unfed run W again.
  std::mt19937 rng(11);
  const Tensor x = random_tensor<float>({2, 16, 6, 6}, rng);
  const Tensor w1 = random_tensor<float>({16, 16, 3, 3}, rng);
  const Tensor w2 = random_tensor<float>({16, 16, 3, 3}, rng);
  const std::map<std::string, Attribute> attrs = {{"pads", attr_ints({1, 1, 1, 1})}};
  const Tensor want1 = run_op("Conv", attrs, {x, w1});  // fed: transformed per run
  const Tensor want2 = run_op("Conv", attrs, {x, w2});
  Graph g;
  g.opsets[""] = 13;
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::nullopt});
  g.initializers["W"] = w1;
  Node n;
  n.name = "conv";
  n.op_type = "Conv";
  n.op = OpId::Conv;
  n.opset = 13;
  n.inputs = {"x", "W"};
  n.outputs = {"y"};
  n.attrs = attrs;
  g.nodes.push_back(n);
  g.outputs.push_back(ValueInfo{"y", DType::Undefined, std::nullopt});
  Executor ex(g);
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.to_float_vector() == b.to_float_vector();
  };
  CHECK(same(ex.run({{"x", x}})[0], want1));
  CHECK(same(ex.run({{"x", x}})[0], want1));  // the kept filters
  CHECK(same(ex.run({{"x", x}, {"W", w2}})[0], want2));
  CHECK(same(ex.run({{"x", x}})[0], want1));
  // A fed W changed in place between runs (the same storage, as a trainer's parameter) is
  // transformed again: its filters are never kept.
  Tensor fed = w2.clone();
  CHECK(same(ex.run({{"x", x}, {"W", fed}})[0], want2));
  std::copy_n(w1.data<float>(), w1.numel(), fed.data<float>());
  CHECK(same(ex.run({{"x", x}, {"W", fed}})[0], want1));
}

TEST_CASE("Conv: errors name the node and the shapes") {
  Tensor X(DType::F32, {1, 3, 5, 5});
  Tensor W(DType::F32, {2, 2, 3, 3});  // 2 input channels, X has 3
  try {
    run_op("Conv", {}, {X, W});
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("node 'n0' (Conv") != std::string::npos);
    CHECK(msg.find("[1, 3, 5, 5]") != std::string::npos);
    CHECK(msg.find("[2, 2, 3, 3]") != std::string::npos);
  }
  Tensor W3(DType::F32, {2, 3, 3, 3});
  CHECK_THROWS_WITH_AS(run_op("Conv", {{"kernel_shape", attr_ints({2, 2})}}, {X, W3}),
                       doctest::Contains("kernel_shape"), Error);
  CHECK_THROWS_WITH_AS(run_op("Conv", {}, {X, W3, Tensor(DType::F32, {3})}),
                       doctest::Contains("B [3]"), Error);
  Tensor W7(DType::F32, {2, 3, 7, 7});  // larger than the unpadded input
  CHECK_THROWS_WITH_AS(run_op("Conv", {}, {X, W7}), doctest::Contains("smaller than"), Error);
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

namespace {

struct ConvTCase {
  std::string name;
  Shape x;    // N, C, spatial...
  int64_t m;  // output channels (M = W.shape[1] * group)
  std::vector<int64_t> k;
  int64_t group = 1;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {}, output_padding = {},
                       output_shape = {};
  std::string auto_pad = {};
  bool bias = true;
};

// Y[n, g·Mg + m, i·s - pad_begin + t·d] += X[n, g·Cg + c, i] · W[g·Cg + c, m, t]   (+ B)
template <class T>
Tensor reference_conv_transpose(const ConvTCase& c, const Tensor& X, const Tensor& W,
                                const Tensor* B) {
  const size_t nd = c.k.size();
  const int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, Mg = c.m / G;
  std::vector<int64_t> pb(nd, 0);
  Shape yshape = {N, c.m};
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = c.x[2 + i], s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t op = c.output_padding.empty() ? 0 : c.output_padding[i];
    const int64_t natural = s * (in - 1) + op + (c.k[i] - 1) * d + 1;
    int64_t out;
    if (!c.output_shape.empty() || c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out = c.output_shape.empty() ? in * s : c.output_shape[i];
      const int64_t total = natural - out;
      pb[i] = total < 0 ? 0 : (c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2);
    } else {
      pb[i] = c.pads.empty() ? 0 : c.pads[i];
      out = natural - pb[i] - (c.pads.empty() ? 0 : c.pads[nd + i]);
    }
    yshape.push_back(out);
  }
  std::vector<double> acc(static_cast<size_t>(numel(yshape)), 0.0);
  const auto ys = strides_of(yshape), ws = strides_of(W.shape());
  Shape kshape(c.k.begin(), c.k.end());
  int64_t xi = 0;
  for_each_index(X.shape(), [&](const std::vector<int64_t>& i) {
    const double xv = static_cast<double>(X.data<T>()[xi++]);
    const int64_t n = i[0], ch = i[1], g = ch / Cg;
    for (int64_t m = 0; m < Mg; ++m)
      for_each_index(kshape, [&](const std::vector<int64_t>& t) {
        int64_t yo = n * ys[0] + (g * Mg + m) * ys[1];
        int64_t wo = ch * ws[0] + m * ws[1];
        for (size_t a = 0; a < nd; ++a) {
          const int64_t s = c.strides.empty() ? 1 : c.strides[a];
          const int64_t d = c.dilations.empty() ? 1 : c.dilations[a];
          const int64_t pos = i[2 + a] * s - pb[a] + t[a] * d;
          if (pos < 0 || pos >= yshape[2 + a]) return;
          yo += pos * ys[2 + a];
          wo += t[a] * ws[2 + a];
        }
        acc[yo] += xv * static_cast<double>(W.data<T>()[wo]);
      });
  });
  Tensor Y(dtype_of<T>(), yshape);
  const int64_t plane = numel(yshape) / (N * c.m);
  for (int64_t j = 0; j < Y.numel(); ++j)
    Y.data<T>()[j] =
        static_cast<T>(acc[j] + (B ? static_cast<double>(B->data<T>()[(j / plane) % c.m]) : 0.0));
  return Y;
}

template <class T>
void run_conv_transpose_cases(double tol) {
  const std::vector<ConvTCase> cases = {
      {"2d stride 1", {2, 3, 4, 5}, 2, {3, 3}},
      {"2d stride 2 pads output_padding",
       {2, 2, 4, 3},
       3,
       {3, 3},
       1,
       {2, 3},
       {1, 0, 1, 1},
       {},
       {1, 2}},
      {"2d dilated", {1, 2, 3, 3}, 2, {2, 3}, 1, {1, 2}, {}, {2, 2}},
      {"2d groups no bias", {2, 4, 3, 4}, 6, {3, 2}, 2, {2, 1}, {}, {}, {}, {}, "", false},
      {"2d output_shape", {1, 1, 3, 3}, 2, {3, 3}, 1, {3, 2}, {}, {}, {}, {10, 8}},
      {"2d output_shape smaller", {1, 2, 3, 3}, 2, {3, 3}, 1, {2, 2}, {}, {}, {}, {6, 5}},
      {"2d SAME_UPPER", {1, 2, 3, 4}, 2, {3, 3}, 1, {2, 2}, {}, {}, {}, {}, "SAME_UPPER"},
      {"2d SAME_LOWER", {1, 2, 3, 4}, 2, {3, 3}, 1, {2, 2}, {}, {}, {}, {}, "SAME_LOWER"},
      {"2d pointwise", {3, 4, 3, 3}, 5, {1, 1}},
      {"2d many images", {12, 3, 2, 2}, 2, {2, 2}, 1, {2, 2}},
      {"1d", {2, 3, 6}, 2, {4}, 1, {3}, {1, 2}},
      {"3d", {1, 2, 2, 3, 3}, 3, {2, 2, 3}, 1, {2, 1, 2}, {0, 1, 0, 1, 0, 1}},
  };
  std::mt19937 rng(7);
  for (const ConvTCase& c : cases) {
    Shape wshape = {c.x[1], c.m / c.group};
    wshape.insert(wshape.end(), c.k.begin(), c.k.end());
    Tensor X = random_tensor<T>(c.x, rng), W = random_tensor<T>(wshape, rng);
    Tensor B = c.bias ? random_tensor<T>({c.m}, rng) : Tensor();
    std::map<std::string, Attribute> a;
    if (c.group != 1) a["group"] = attr_i(c.group);
    if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
    if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
    if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
    if (!c.output_padding.empty()) a["output_padding"] = attr_ints(c.output_padding);
    if (!c.output_shape.empty()) a["output_shape"] = attr_ints(c.output_shape);
    if (!c.auto_pad.empty()) a["auto_pad"] = attr_s(c.auto_pad);
    const Tensor want = reference_conv_transpose<T>(c, X, W, c.bias ? &B : nullptr);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      check_close<T>(run_op("ConvTranspose", a, {X, W, B}), want, tol,
                     c.name + " threads=" + std::to_string(threads));
    }
  }
  set_num_threads(0);
}

}  // namespace

TEST_CASE("ConvTranspose: hand-computed 1-D case") {
  // X = [1, 2], W = [1, 10, 100], stride 2: Y = [1, 10, 100 + 2, 20, 200].
  Tensor X = Tensor::from_vector<float>({1, 1, 2}, {1, 2});
  Tensor W = Tensor::from_vector<float>({1, 1, 3}, {1, 10, 100});
  Tensor Y = run_op("ConvTranspose", {{"strides", attr_ints({2})}}, {X, W});
  CHECK(Y.shape() == Shape{1, 1, 5});
  CHECK(Y.to_float_vector() == std::vector<float>{1, 10, 102, 20, 200});
}

TEST_CASE("ConvTranspose matches the direct definition (float32)") {
  run_conv_transpose_cases<float>(1e-4);
}

TEST_CASE("ConvTranspose matches the direct definition (float64)") {
  run_conv_transpose_cases<double>(1e-11);
}

TEST_CASE("ConvTranspose: errors name the shapes") {
  Tensor X(DType::F32, {1, 3, 4, 4});
  Tensor W(DType::F32, {2, 2, 3, 3});  // W.shape[0] must equal C = 3
  CHECK_THROWS_WITH_AS(run_op("ConvTranspose", {}, {X, W}), doctest::Contains("[2, 2, 3, 3]"),
                       Error);
  Tensor W3(DType::F32, {3, 2, 3, 3});
  CHECK_THROWS_WITH_AS(run_op("ConvTranspose", {{"output_padding", attr_ints({1})}}, {X, W3}),
                       doctest::Contains("output_padding"), Error);
}

TEST_CASE("Conv, ConvTranspose and their gradients: the shared operand checks (conv_geometry.h)") {
  const Tensor X(DType::F32, {1, 3, 4, 4}), dY(DType::F32, {1});
  const Tensor conv_w(DType::F32, {2, 3, 3, 3}), transpose_w(DType::F32, {3, 2, 3, 3});
  const std::map<std::string, Attribute> none, k22 = {{"kernel_shape", attr_ints({2, 2})}};
  for (const char* op : {"Conv", "ConvTranspose", "ConvGrad", "ConvTransposeGrad"}) {
    CAPTURE(op);
    const std::string name = op;
    const bool grad = name.size() > 4 && name.substr(name.size() - 4) == "Grad";
    const bool transpose = name.rfind("ConvTranspose", 0) == 0;
    const Tensor& w = transpose ? transpose_w : conv_w;
    auto fails = [&](const std::map<std::string, Attribute>& attrs, const Tensor& x,
                     const Tensor& wt, const std::string& msg) {
      std::vector<Tensor> in = {x, wt};
      if (grad) in.insert(in.begin(), dY);
      CHECK_THROWS_WITH_AS(oat_test::run_node(op, grad ? 1 : 13, attrs, in, grad ? 2 : 1),
                           doctest::Contains(msg.c_str()), Error);
    };
    fails(none, Tensor(DType::F32, {1, 3}), w, "X must be (N, C, spatial...), got [1, 3]");
    fails(none, X, Tensor(DType::F32, {3, 3, 3}),
          "W [3, 3, 3] and X [1, 3, 4, 4] must have the same rank");
    fails(k22, X, w, "kernel_shape [2, 2] does not match W " + shape_str(w.shape()));
    if (transpose)
      fails(none, X, Tensor(DType::F32, {2, 2, 3, 3}),
            "X [1, 3, 4, 4] and W [2, 2, 3, 3] do not match group=1 (need W.shape[0] = C, C % "
            "group == 0)");
    else
      fails(none, X, Tensor(DType::F32, {2, 2, 3, 3}),
            "X [1, 3, 4, 4] and W [2, 2, 3, 3] do not match group=1 (need C = W.shape[1] * group, "
            "M % group == 0)");
  }
}
