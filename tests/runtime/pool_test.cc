// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, DepthToSpace and SpaceToDepth
// (runtime/cpu/kernels/pool.cc, space_depth.cc): hand-computed cases, the Indices output in both
// storage orders, and random cases against direct loops written from the ONNX definitions
// (1-/2-/3-D, strides, pads, dilations, ceil_mode, auto_pad, count_include_pad).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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
using oat_test::iota_f;

namespace {

// Runs one opset-13 node with `n_outputs` outputs.
std::vector<Tensor> run_op(const std::string& op, const std::map<std::string, Attribute>& attrs,
                           const std::vector<Tensor>& inputs, int n_outputs = 1) {
  return oat_test::run_node(op, 13, attrs, inputs, n_outputs);
}

struct PoolCase {
  std::string name;
  Shape x;
  std::vector<int64_t> k;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {};
  bool ceil_mode = false;
  std::string auto_pad = {};
};

// Output size and begin padding along each axis (ONNX's formulas, PyTorch's ceil_mode rule).
void pool_geometry(const PoolCase& c, std::vector<int64_t>* pb, std::vector<int64_t>* pe,
                   Shape* out) {
  const size_t nd = c.k.size();
  pb->assign(nd, 0);
  pe->assign(nd, 0);
  out->clear();
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = c.x[2 + i], s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t d = c.dilations.empty() ? 1 : c.dilations[i], dk = (c.k[i] - 1) * d + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t o = (in + s - 1) / s, total = std::max<int64_t>(0, (o - 1) * s + dk - in);
      (*pb)[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      (*pe)[i] = total - (*pb)[i];
      out->push_back(o);
      continue;
    }
    (*pb)[i] = c.pads.empty() ? 0 : c.pads[i];
    (*pe)[i] = c.pads.empty() ? 0 : c.pads[nd + i];
    const double span = static_cast<double>(in + (*pb)[i] + (*pe)[i] - dk) / s;
    int64_t o = static_cast<int64_t>(c.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (c.ceil_mode && (o - 1) * s >= in + (*pb)[i]) --o;
    out->push_back(o);
  }
}

// kind: "max", "avg" (count_include_pad 0) or "avg_pad" (count_include_pad 1).
Tensor reference_pool(const PoolCase& c, const Tensor& X, const std::string& kind) {
  std::vector<int64_t> pb, pe;
  Shape osp;
  pool_geometry(c, &pb, &pe, &osp);
  const size_t nd = c.k.size();
  Shape yshape = {c.x[0], c.x[1]};
  yshape.insert(yshape.end(), osp.begin(), osp.end());
  Tensor Y(DType::F32, yshape);
  const int64_t planes = c.x[0] * c.x[1], P = numel(osp);
  int64_t plane = 1;
  for (size_t i = 0; i < nd; ++i) plane *= c.x[2 + i];
  for (int64_t nc = 0; nc < planes; ++nc)
    for (int64_t o = 0; o < P; ++o) {
      std::vector<int64_t> oi(nd);
      for (int64_t r = o, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
        oi[i] = r % osp[i];
        r /= osp[i];
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t inside = 0, in_padded = 0;
      const int64_t taps = [&] {
        int64_t t = 1;
        for (int64_t k : c.k) t *= k;
        return t;
      }();
      for (int64_t t = 0; t < taps; ++t) {
        bool in = true, padded = true;
        int64_t flat = 0;
        for (int64_t r = t, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
          const int64_t ti = r % c.k[i];
          r /= c.k[i];
          const int64_t s = c.strides.empty() ? 1 : c.strides[i];
          const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
          const int64_t pos = oi[i] * s - pb[i] + ti * d;
          if (pos < 0 || pos >= c.x[2 + i]) in = false;
          if (pos < -pb[i] || pos >= c.x[2 + i] + pe[i]) padded = false;
          int64_t stride = 1;
          for (size_t j = i + 1; j < nd; ++j) stride *= c.x[2 + j];
          flat += pos * stride;
        }
        in_padded += padded;
        if (!in) continue;
        const double v = X.data<float>()[nc * plane + flat];
        best = std::max(best, v);
        sum += v;
        ++inside;
      }
      double y =
          kind == "max" ? best : sum / static_cast<double>(kind == "avg" ? inside : in_padded);
      Y.data<float>()[nc * P + o] = static_cast<float>(y);
    }
  return Y;
}

void check_close(const Tensor& got, const Tensor& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got.data<float>()[i]) -
                                     static_cast<double>(want.data<float>()[i])));
  CHECK(worst <= 1e-5);
}

}  // namespace

TEST_CASE("MaxPool and AveragePool: hand-computed 2-D cases") {
  const Tensor X = iota_f({1, 1, 4, 4});  // rows 0..3, 4..7, 8..11, 12..15
  auto y = run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
                  {X})[0];
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(y.to_float_vector() == std::vector<float>{5, 7, 13, 15});
  y = run_op("AveragePool", {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}},
             {X})[0];
  CHECK(y.to_float_vector() == std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f});
  // Pads 1, kernel 2, stride 2: corner windows hold one real element.
  std::map<std::string, Attribute> a = {{"kernel_shape", attr_ints({2, 2})},
                                        {"strides", attr_ints({2, 2})},
                                        {"pads", attr_ints({1, 1, 1, 1})}};
  y = run_op("AveragePool", a, {X})[0];
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  CHECK(y.to_float_vector()[0] == 0.0f);  // only X[0, 0] = 0
  CHECK(y.to_float_vector()[1] == 1.5f);  // (1 + 2) / 2
  a["count_include_pad"] = attr_i(1);
  y = run_op("AveragePool", a, {X})[0];
  CHECK(y.to_float_vector()[1] == 0.75f);         // (1 + 2) / 4
  CHECK(y.to_float_vector()[8] == 15.0f / 4.0f);  // X[3, 3] alone, divided by 4
  // ceil_mode adds the partial window at the end: 4 wide, kernel 3, stride 2 -> 2 outputs.
  y = run_op("MaxPool",
             {{"kernel_shape", attr_ints({3, 3})},
              {"strides", attr_ints({2, 2})},
              {"ceil_mode", attr_i(1)}},
             {X})[0];
  CHECK(y.to_float_vector() == std::vector<float>{10, 11, 14, 15});
}

TEST_CASE("MaxPool 2x2 stride 2: NaN and -inf as ONNX Runtime's CPU MaxPool") {
  // From lowest(), only a larger value replaces the maximum: a NaN never wins against a number,
  // and a window of -infs and NaNs gives lowest() (the plain 2x2 path and pool_rows alike).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const Tensor X =
      Tensor::from_vector<float>({1, 1, 2, 8}, {nan, 1, -inf, -inf, nan, nan, 3, -2,  //
                                                -5, 2, -inf, -inf, nan, nan, nan, -7});
  for (const std::vector<int64_t>& dil : {std::vector<int64_t>{1, 1}, {1, 2}}) {
    CAPTURE(dil[1]);  // dilation 2 along W: pool_rows, over columns {0, 2}, {2, 4}, {4, 6}
    const Tensor y = run_op("MaxPool",
                            {{"kernel_shape", attr_ints({2, 2})},
                             {"strides", attr_ints({2, 2})},
                             {"dilations", attr_ints(dil)}},
                            {X})[0];
    if (dil[1] == 1)
      CHECK(y.to_float_vector() == std::vector<float>{2, std::numeric_limits<float>::lowest(),
                                                      std::numeric_limits<float>::lowest(), 3});
    else
      CHECK(y.to_float_vector() == std::vector<float>{-5, std::numeric_limits<float>::lowest(), 3});
  }
}

TEST_CASE("MaxPool: the Indices output, row-major and column-major") {
  Tensor X = Tensor::from_vector<float>({1, 2, 2, 3}, {1, 9, 2, 3, 4, 5,  //
                                                       7, 0, 8, 6, 1, 2});
  std::map<std::string, Attribute> a = {{"kernel_shape", attr_ints({2, 2})}};
  auto out = run_op("MaxPool", a, {X}, 2);
  CHECK(out[0].to_float_vector() == std::vector<float>{9, 9, 7, 8});
  CHECK(out[1].dtype() == DType::I64);
  // Flat indices into X (N, C, H, W): channel 1 starts at 6.
  CHECK(out[1].to_int_vector() == std::vector<int64_t>{1, 1, 6, 8});
  a["storage_order"] = attr_i(1);  // spatial part column-major: h + H·w
  out = run_op("MaxPool", a, {X}, 2);
  CHECK(out[1].to_int_vector() == std::vector<int64_t>{2, 2, 6, 10});
}

TEST_CASE("MaxPool and AveragePool match the direct definition") {
  const std::vector<PoolCase> cases = {
      {"2d 3x3 s2 p1", {2, 3, 11, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      {"2d asymmetric pads", {1, 2, 7, 8}, {3, 2}, {1, 2}, {0, 1, 2, 1}},
      {"2d dilated", {2, 2, 9, 9}, {3, 3}, {2, 1}, {1, 1, 1, 1}, {2, 2}},
      {"2d ceil_mode", {1, 3, 8, 7}, {3, 3}, {2, 2}, {}, {}, true},
      {"2d ceil_mode pads", {1, 1, 6, 6}, {2, 2}, {3, 3}, {1, 1, 1, 1}, {}, true},
      // ceil_mode would start a last window inside the end padding: it is dropped.
      {"2d ceil_mode dropped window", {1, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {}, true},
      {"2d SAME_UPPER", {1, 2, 7, 6}, {3, 2}, {2, 2}, {}, {}, false, "SAME_UPPER"},
      {"2d SAME_LOWER", {1, 2, 7, 6}, {3, 2}, {2, 2}, {}, {}, false, "SAME_LOWER"},
      {"2d VALID", {2, 1, 6, 7}, {2, 3}, {2, 2}, {}, {}, false, "VALID"},
      {"1d", {3, 2, 13}, {4}, {3}, {1, 2}},
      {"3d", {1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}},
      {"big enough for threads", {4, 16, 20, 20}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      // MaxPool's plain 2x2 stride-2 path (Window3::is_plain_2x2): odd sizes leave a row and a
      // column out; with ceil_mode the last window would leave the image (the general path).
      {"2d 2x2 s2 odd sizes", {2, 3, 11, 13}, {2, 2}, {2, 2}},
      {"2d 2x2 s2 threads", {33, 32, 32, 32}, {2, 2}, {2, 2}},  // > 4 * 2^18 elements
      {"2d 2x2 s2 ceil_mode", {1, 2, 7, 9}, {2, 2}, {2, 2}, {}, {}, true},
  };
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-5, 5);
  for (const PoolCase& c : cases) {
    Tensor X(DType::F32, c.x);
    for (int64_t i = 0; i < X.numel(); ++i) X.data<float>()[i] = u(rng);
    std::map<std::string, Attribute> a = {{"kernel_shape", attr_ints(c.k)}};
    if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
    if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
    if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
    if (c.ceil_mode) a["ceil_mode"] = attr_i(1);
    if (!c.auto_pad.empty()) a["auto_pad"] = attr_s(c.auto_pad);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      const std::string tag = c.name + " threads=" + std::to_string(threads);
      check_close(run_op("MaxPool", a, {X})[0], reference_pool(c, X, "max"), "max " + tag);
      // With Indices, the same maxima through the other code path.
      check_close(run_op("MaxPool", a, {X}, 2)[0], reference_pool(c, X, "max"), "max+i " + tag);
      check_close(run_op("AveragePool", a, {X})[0], reference_pool(c, X, "avg"), "avg " + tag);
      auto ap = a;
      ap["count_include_pad"] = attr_i(1);
      check_close(run_op("AveragePool", ap, {X})[0], reference_pool(c, X, "avg_pad"),
                  "avg count_include_pad " + tag);
    }
  }
  set_num_threads(0);
}

TEST_CASE("MaxPool on uint8 and float64") {
  Tensor X = Tensor::from_vector<uint8_t>({1, 1, 2, 3}, {1, 200, 3, 4, 5, 250});
  auto y = run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2})}}, {X})[0];
  CHECK(y.dtype() == DType::U8);
  CHECK(y.to_int_vector() == std::vector<int64_t>{200, 250});
  Tensor Xd = Tensor::from_vector<double>({1, 1, 3}, {0.5, -1.0, 2.25});
  auto yd = run_op("AveragePool", {{"kernel_shape", attr_ints({2})}}, {Xd})[0];
  CHECK(yd.dtype() == DType::F64);
  CHECK(yd.data<double>()[0] == -0.25);
  CHECK(yd.data<double>()[1] == 0.625);
}

TEST_CASE("Pool errors name the node and the shapes") {
  const Tensor X = iota_f({1, 1, 3, 3});
  CHECK_THROWS_WITH_AS(run_op("MaxPool", {}, {X}), doctest::Contains("kernel_shape"), Error);
  CHECK_THROWS_WITH_AS(run_op("AveragePool", {{"kernel_shape", attr_ints({4, 4})}}, {X}),
                       doctest::Contains("[1, 1, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS(
      run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({1})}}, {X}),
      doctest::Contains("node 'n0' (MaxPool"), Error);
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool") {
  const Tensor X = iota_f({2, 3, 2, 2});  // plane k holds 4k .. 4k + 3
  auto avg = run_op("GlobalAveragePool", {}, {X})[0];
  CHECK(avg.shape() == Shape{2, 3, 1, 1});
  CHECK(avg.to_float_vector() == std::vector<float>{1.5f, 5.5f, 9.5f, 13.5f, 17.5f, 21.5f});
  auto mx = run_op("GlobalMaxPool", {}, {X})[0];
  CHECK(mx.to_float_vector() == std::vector<float>{3, 7, 11, 15, 19, 23});
  auto avg1d = run_op("GlobalAveragePool", {}, {iota_f({1, 2, 5})})[0];
  CHECK(avg1d.shape() == Shape{1, 2, 1});
  CHECK(avg1d.to_float_vector() == std::vector<float>{2, 7});
  CHECK_THROWS_AS(run_op("GlobalMaxPool", {}, {iota_f({2, 3})}), Error);
}

TEST_CASE("DepthToSpace (DCR, CRD) and SpaceToDepth") {
  // C = 8, blocksize 2, H = W = 1: Y[c, i, j] is channel (i·2 + j)·2 + c (DCR) or c·4 + i·2 + j
  // (CRD).
  const Tensor X = iota_f({1, 8, 1, 1});
  auto dcr = run_op("DepthToSpace", {{"blocksize", attr_i(2)}}, {X})[0];
  CHECK(dcr.shape() == Shape{1, 2, 2, 2});
  CHECK(dcr.to_float_vector() == std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7});
  auto crd = run_op("DepthToSpace", {{"blocksize", attr_i(2)}, {"mode", attr_s("CRD")}}, {X})[0];
  CHECK(crd.to_float_vector() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});

  // SpaceToDepth then DepthToSpace (DCR) is the identity, on an integer dtype too.
  Tensor Xi(DType::I64, {2, 3, 4, 6});
  for (int64_t i = 0; i < Xi.numel(); ++i) Xi.data<int64_t>()[i] = i * 7 - 3;
  auto s2d = run_op("SpaceToDepth", {{"blocksize", attr_i(2)}}, {Xi})[0];
  CHECK(s2d.shape() == Shape{2, 12, 2, 3});
  // Y[n, (i·b + j)·C + c, h, w] = X[n, c, h·b + i, w·b + j]: channel (1·2 + 0)·3 + 1 = 7 at
  // (0, 2) is X[0, 1, 1, 4].
  CHECK(s2d.data<int64_t>()[(7 * 2 + 0) * 3 + 2] == Xi.data<int64_t>()[(1 * 4 + 1) * 6 + 4]);
  auto back = run_op("DepthToSpace", {{"blocksize", attr_i(2)}}, {s2d})[0];
  CHECK(back.to_int_vector() == Xi.to_int_vector());

  CHECK_THROWS_WITH_AS(run_op("DepthToSpace", {{"blocksize", attr_i(3)}}, {X}),
                       doctest::Contains("[1, 8, 1, 1]"), Error);
  CHECK_THROWS_WITH_AS(run_op("SpaceToDepth", {{"blocksize", attr_i(4)}}, {Xi}),
                       doctest::Contains("[2, 3, 4, 6]"), Error);
}
