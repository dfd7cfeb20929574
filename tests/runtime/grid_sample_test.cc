// GridSample, which runs as an expansion (runtime/composite/grid_sample.cc): against a direct
// double-precision transcription of ONNX's reference implementation (op_grid_sample.py; bicubic +
// border clamps the taps, not the coordinate, as PyTorch and ONNX Runtime) for every mode ×
// padding_mode × align_corners, grid points inside and outside [-1, 1], F64, F32
// and F16, and the errors (which name the node).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "runtime/error.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor random_f64(const Shape& s, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(DType::F64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

struct Ref {
  std::string mode, pad;
  bool align;

  double denorm(double g, int64_t s) const {
    return align ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;
  }
  static double reflect(double x, double lo, double hi) {
    const double rng = hi - lo;
    if (x < lo) {
      const double dx = lo - x;
      const int64_t n = static_cast<int64_t>(dx / rng);
      const double r = dx - n * rng;
      return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
      const double dx = x - hi;
      const int64_t n = static_cast<int64_t>(dx / rng);
      const double r = dx - n * rng;
      return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
  }
  double lo() const { return align ? 0.0 : -0.5; }
  double hi(int64_t s) const { return align ? s - 1.0 : s - 0.5; }
  // The reference's _pixel_at_array for one axis: the index read, or -1 for a zero.
  int64_t pixel(int64_t i, int64_t s) const {
    if (pad == "zeros") return i >= 0 && i < s ? i : -1;
    if (pad == "border") return std::clamp<int64_t>(i, 0, s - 1);
    return static_cast<int64_t>(reflect(static_cast<double>(i), lo(), hi(s)));
  }
  static void cubic(double x, double* c) {
    const double A = -0.75;
    x = std::abs(x);
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
  }

  std::vector<double> run(const Tensor& x, const Tensor& grid) const {
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int64_t Ho = grid.dim(1), Wo = grid.dim(2);
    std::vector<double> y;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        auto at = [&](int64_t r, int64_t q) {
          const int64_t rr = pixel(r, H), qq = pixel(q, W);
          if (rr < 0 || qq < 0) return 0.0;
          return x.item_as_double(((n * C + c) * H + rr) * W + qq);
        };
        for (int64_t oy = 0; oy < Ho; ++oy)
          for (int64_t ox = 0; ox < Wo; ++ox) {
            const int64_t g = ((n * Ho + oy) * Wo + ox) * 2;
            double v[2] = {denorm(grid.item_as_double(g + 1), H),
                           denorm(grid.item_as_double(g), W)};  // (y, x)
            const int64_t dims[2] = {H, W};
            if (mode == "nearest") v[0] = std::nearbyint(v[0]), v[1] = std::nearbyint(v[1]);
            for (int i = 0; i < 2; ++i)
              if (v[i] < lo() || v[i] > hi(dims[i])) {
                // Bicubic + border: taps clamped by pixel(), the coordinate left (PyTorch, ORT).
                if (pad == "border" && mode != "bicubic") v[i] = std::clamp(v[i], 0.0, dims[i] - 1.0);
                if (pad == "reflection") v[i] = reflect(v[i], lo(), hi(dims[i]));
              }
            double out = 0;
            if (mode == "nearest") {
              out = at(static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]));
            } else if (mode == "bilinear") {
              const double y0 = std::floor(v[0]), x0 = std::floor(v[1]);
              const double ty = v[0] - y0, tx = v[1] - x0;
              const int64_t r = static_cast<int64_t>(y0), q = static_cast<int64_t>(x0);
              out = (1 - ty) * ((1 - tx) * at(r, q) + tx * at(r, q + 1)) +
                    ty * ((1 - tx) * at(r + 1, q) + tx * at(r + 1, q + 1));
            } else {
              const double y0 = std::floor(v[0]), x0 = std::floor(v[1]);
              double cy[4], cx[4];
              cubic(v[0] - y0, cy);
              cubic(v[1] - x0, cx);
              const int64_t r = static_cast<int64_t>(y0), q = static_cast<int64_t>(x0);
              for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) out += cy[i] * cx[j] * at(r - 1 + i, q - 1 + j);
            }
            y.push_back(out);
          }
      }
    return y;
  }
};

double worst_error(const Tensor& got, const std::vector<double>& want) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(got.item_as_double(i) - want[i]) / (1 + std::abs(want[i])));
  return worst;
}

std::map<std::string, Attribute> attrs_of(const Ref& r) {
  return {{"mode", attr_s(r.mode)},
          {"padding_mode", attr_s(r.pad)},
          {"align_corners", attr_i(r.align ? 1 : 0)}};
}

}  // namespace

TEST_CASE("GridSample matches ONNX's reference: every mode, padding and align_corners") {
  // Grid values in [-2.3, 2.3]: about half the points fall outside the image, several
  // reflections away.
  const Tensor x = random_f64({2, 3, 4, 5}, 1, -2.0, 2.0);
  const Tensor grid = random_f64({2, 3, 4, 2}, 2, -2.3, 2.3);
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        const Ref r{mode, pad, align};
        CAPTURE(r.mode);
        CAPTURE(r.pad);
        CAPTURE(align);
        const std::vector<double> want = r.run(x, grid);
        const Tensor y = run1("GridSample", 16, attrs_of(r), {x, grid});
        CHECK(y.shape() == Shape{2, 3, 3, 4});
        CHECK(worst_error(y, want) <= 1e-12);
        const Tensor y32 = run1("GridSample", 16, attrs_of(r),
                                {cast_tensor(x, DType::F32), cast_tensor(grid, DType::F32)});
        CHECK(y32.dtype() == DType::F32);
        // nearest may round a coordinate within FP32's error of .5 the other way: compare to the
        // reference on the FP32-rounded inputs
        const std::vector<double> want32 =
            r.run(cast_tensor(cast_tensor(x, DType::F32), DType::F64),
                  cast_tensor(cast_tensor(grid, DType::F32), DType::F64));
        CHECK(worst_error(y32, want32) <= 2e-5);
      }
}

TEST_CASE("GridSample in F16 and with opset 20's names; defaults") {
  const Tensor x = random_f64({1, 2, 3, 4}, 3, -1.0, 1.0);
  const Tensor grid = random_f64({1, 2, 5, 2}, 4, -1.2, 1.2);
  const Tensor x16 = cast_tensor(x, DType::F16), g16 = cast_tensor(grid, DType::F16);
  const Tensor x16d = cast_tensor(x16, DType::F64), g16d = cast_tensor(g16, DType::F64);
  for (const char* pad : {"zeros", "border", "reflection"})
    for (bool align : {false, true}) {
      const Ref r{"bilinear", pad, align};
      CAPTURE(r.pad);
      CAPTURE(align);
      const Tensor y = run1("GridSample", 16, attrs_of(r), {x16, g16});
      CHECK(y.dtype() == DType::F16);
      CHECK(worst_error(y, r.run(x16d, g16d)) <= 1e-2);
      const Ref rc{"bicubic", pad, align};
      CHECK(worst_error(run1("GridSample", 16, attrs_of(rc), {x16, g16}), rc.run(x16d, g16d)) <=
            3e-2);
    }
  // defaults: bilinear, zeros, align_corners 0; opset 20 spells bilinear "linear", bicubic "cubic"
  CHECK(worst_error(run1("GridSample", 16, {}, {x, grid}), Ref{"bilinear", "zeros", false}.run(x, grid)) <=
        1e-12);
  CHECK(worst_error(run1("GridSample", 20, {{"mode", attr_s("cubic")}}, {x, grid}),
                    Ref{"bicubic", "zeros", false}.run(x, grid)) <= 1e-12);
  CHECK(worst_error(run1("GridSample", 20, {{"mode", attr_s("linear")}}, {x, grid}),
                    Ref{"bilinear", "zeros", false}.run(x, grid)) <= 1e-12);
}

TEST_CASE("GridSample: nearest rounds halves to even; a single pixel with align_corners") {
  // W = 4, align_corners 1: x = (g + 1)/2 · 3, so g = −2/3 gives 0.5 (-> 0), g = 0 gives 1.5 (-> 2)
  Tensor x = Tensor::from_vector<double>({1, 1, 1, 4}, {10, 20, 30, 40});
  Tensor grid = Tensor::from_vector<double>({1, 1, 2, 2}, {-2.0 / 3.0, 0, 0, 0});
  const Tensor y = run1("GridSample", 16,
                        {{"mode", attr_s("nearest")}, {"align_corners", attr_i(1)}}, {x, grid});
  CHECK(y.item_as_double(0) == 10);
  CHECK(y.item_as_double(1) == 30);
  // 1 × 1 image, align_corners 1, reflection: every point reads the pixel
  Tensor one = Tensor::from_vector<double>({1, 1, 1, 1}, {7});
  Tensor g2 = Tensor::from_vector<double>({1, 1, 2, 2}, {0.3, -1.7, 2.5, 0.1});
  for (const char* mode : {"bilinear", "nearest"}) {
    const Tensor y1 = run1("GridSample", 16,
                           {{"mode", attr_s(mode)},
                            {"padding_mode", attr_s("reflection")},
                            {"align_corners", attr_i(1)}},
                           {one, g2});
    CHECK(y1.item_as_double(0) == 7);
    CHECK(y1.item_as_double(1) == 7);
  }
}

TEST_CASE("GridSample errors name the node") {
  const Tensor x = random_f64({1, 1, 2, 2}, 5, -1, 1);
  const Tensor grid = random_f64({1, 2, 2, 2}, 6, -1, 1);
  auto message = [&](const std::map<std::string, Attribute>& a, const std::vector<Tensor>& in) {
    try {
      run1("GridSample", 16, a, in);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message({{"mode", attr_s("area")}}, {x, grid});
  CHECK(m.find("n0") != std::string::npos);
  CHECK(m.find("unknown mode 'area'") != std::string::npos);
  m = message({{"padding_mode", attr_s("wrap")}}, {x, grid});
  CHECK(m.find("unknown padding_mode 'wrap'") != std::string::npos);
  m = message({}, {random_f64({1, 1, 2, 2, 2}, 7, -1, 1), random_f64({1, 2, 2, 2, 3}, 8, -1, 1)});
  CHECK(m.find("n0") != std::string::npos);
  CHECK(m.find("5-D") != std::string::npos);
  m = message({}, {x, random_f64({1, 2, 2, 3}, 9, -1, 1)});
  CHECK(m.find("must be 2") != std::string::npos);
  m = message({}, {random_f64({2, 2, 2}, 10, -1, 1), grid});
  CHECK(m.find("must be 4-D") != std::string::npos);
}

TEST_CASE("GridSample with symbolic N, H, W, Ho, Wo; an unknown rank fails naming X") {
  Graph g;
  g.opsets[""] = 16;
  Node n;
  n.name = "gs";
  n.op_type = "GridSample";
  n.op = op_from_name("GridSample");
  n.opset = 16;
  n.attrs = {{"mode", attr_s("bicubic")}, {"padding_mode", attr_s("reflection")}};
  n.inputs = {"X", "grid"};
  n.outputs = {"Y"};
  g.nodes.push_back(n);
  g.inputs.push_back(
      ValueInfo{"X", DType::F32, std::vector<Dim>{{-1, "N"}, {2, ""}, {-1, "H"}, {-1, "W"}}});
  g.inputs.push_back(ValueInfo{
      "grid", DType::F32, std::vector<Dim>{{-1, "N"}, {-1, "Ho"}, {-1, "Wo"}, {2, ""}}});
  g.outputs.push_back(ValueInfo{"Y", DType::Undefined, std::nullopt});
  Executor ex(g);
  const Ref r{"bicubic", "reflection", false};
  for (unsigned seed : {11u, 12u}) {  // two sets of sizes through one executor
    const Tensor x = random_f64(seed == 11 ? Shape{1, 2, 3, 6} : Shape{2, 2, 5, 4}, seed, -1, 1);
    const Tensor grid =
        random_f64(seed == 11 ? Shape{1, 2, 3, 2} : Shape{2, 4, 1, 2}, seed + 10, -1.5, 1.5);
    const Tensor y = ex.run({{"X", cast_tensor(x, DType::F32)}, {"grid", cast_tensor(grid, DType::F32)}})
                         .at(0);
    CHECK(y.shape() == Shape{x.dim(0), 2, grid.dim(1), grid.dim(2)});
    CHECK(worst_error(y, r.run(cast_tensor(cast_tensor(x, DType::F32), DType::F64),
                               cast_tensor(cast_tensor(grid, DType::F32), DType::F64))) <= 2e-5);
  }
  // The grid an initializer without value_info (exporters need not write one; a trainable
  // grid is one): its tensor gives the rank.
  const Tensor fixed_grid = cast_tensor(random_f64({1, 2, 3, 2}, 31, -1.5, 1.5), DType::F32);
  Graph gi = g;
  gi.inputs.pop_back();
  gi.initializers["grid"] = fixed_grid;
  Executor with_initializer(gi);
  const Tensor x1 = cast_tensor(random_f64({1, 2, 3, 6}, 32, -1, 1), DType::F32);
  CHECK(worst_error(with_initializer.run({{"X", x1}}).at(0),
                    r.run(cast_tensor(x1, DType::F64), cast_tensor(fixed_grid, DType::F64))) <=
        2e-5);
  g.inputs[0].shape = std::nullopt;
  std::string m;
  try {
    Executor bad(g);
    bad.run({{"X", Tensor(DType::F32, Shape{1, 1, 2, 2})}, {"grid", Tensor(DType::F32, Shape{1, 1, 1, 2})}});
  } catch (const std::exception& e) {
    m = e.what();
  }
  CHECK(m.find("gs") != std::string::npos);
  CHECK(m.find("the rank of X 'X' must be known") != std::string::npos);
}
