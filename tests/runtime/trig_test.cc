// Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh (runtime/cpu/kernels/trig.cc): hand values, the
// C library over each function's domain in float32 and float64, NaN outside the domain, and the
// F16 path rounding float's result once.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

struct Fn {
  const char* op;
  double (*ref)(double);
  double lo, hi;  // the sweep, inside the domain
};

const std::vector<Fn>& functions() {
  static const std::vector<Fn> fns = {
      {"Tan", [](double v) { return std::tan(v); }, -1.5, 1.5},
      {"Asin", [](double v) { return std::asin(v); }, -1.0, 1.0},
      {"Acos", [](double v) { return std::acos(v); }, -1.0, 1.0},
      {"Atan", [](double v) { return std::atan(v); }, -50.0, 50.0},
      {"Sinh", [](double v) { return std::sinh(v); }, -20.0, 20.0},
      {"Cosh", [](double v) { return std::cosh(v); }, -20.0, 20.0},
      {"Asinh", [](double v) { return std::asinh(v); }, -1e3, 1e3},
      {"Acosh", [](double v) { return std::acosh(v); }, 1.0, 1e3},
      {"Atanh", [](double v) { return std::atanh(v); }, -0.999, 0.999},
  };
  return fns;
}

// n evenly spaced values in [lo, hi] (both ends included), in `dt`.
Tensor sweep(double lo, double hi, int64_t n, DType dt) {
  Tensor t(DType::F64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = lo + (hi - lo) * i / (n - 1);
  return cast_tensor(t, dt);
}

double run_one(const char* op, double x, DType dt = DType::F32) {
  return run1(op, 9, {}, {sweep(x, x, 2, dt)}).item_as_double(0);
}

}  // namespace

TEST_CASE("trigonometric and hyperbolic ops: hand values") {
  const double pi = M_PI;
  CHECK(run_one("Tan", pi / 4) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(run_one("Asin", 1.0) == doctest::Approx(pi / 2).epsilon(1e-7));
  CHECK(run_one("Asin", -0.5) == doctest::Approx(-pi / 6).epsilon(1e-7));
  CHECK(run_one("Acos", -1.0) == doctest::Approx(pi).epsilon(1e-7));
  CHECK(run_one("Acos", 0.5) == doctest::Approx(pi / 3).epsilon(1e-7));
  CHECK(run_one("Atan", 1.0) == doctest::Approx(pi / 4).epsilon(1e-7));
  CHECK(run_one("Sinh", 1.0) == doctest::Approx((M_E - 1 / M_E) / 2).epsilon(1e-7));
  CHECK(run_one("Cosh", 0.0) == 1.0);
  CHECK(run_one("Cosh", -2.0) == doctest::Approx(3.7621956910836314).epsilon(1e-7));
  CHECK(run_one("Asinh", 0.0) == 0.0);
  CHECK(run_one("Asinh", 1.0) == doctest::Approx(0.881373587019543).epsilon(1e-7));
  CHECK(run_one("Acosh", 1.0) == 0.0);
  CHECK(run_one("Acosh", 2.0) == doctest::Approx(1.3169578969248166).epsilon(1e-7));
  CHECK(run_one("Atanh", 0.5) == doctest::Approx(0.5493061443340549).epsilon(1e-7));
  CHECK(run_one("Atanh", 1.0) == std::numeric_limits<double>::infinity());
  CHECK(run_one("Atanh", -1.0) == -std::numeric_limits<double>::infinity());
  // Outside the domain: NaN, as numpy.
  CHECK(std::isnan(run_one("Asin", 1.5)));
  CHECK(std::isnan(run_one("Acos", -2.0)));
  CHECK(std::isnan(run_one("Acosh", 0.5)));
  CHECK(std::isnan(run_one("Atanh", 2.0)));
  // Sinh/Cosh overflow F32 like the C library (and F16 far earlier: cosh 12 > 65504).
  CHECK(run_one("Cosh", 100.0) == std::numeric_limits<double>::infinity());
  CHECK(run_one("Cosh", 12.0, DType::F16) == std::numeric_limits<double>::infinity());
}

TEST_CASE("trigonometric and hyperbolic ops agree with the C library in F32 and F64") {
  for (const Fn& f : functions()) {
    CAPTURE(std::string(f.op));
    for (DType dt : {DType::F32, DType::F64}) {
      CAPTURE(dtype_name(dt));
      const Tensor x = sweep(f.lo, f.hi, 70001, dt);  // large: the parallel path
      const Tensor y = run1(f.op, 9, {}, {x});
      REQUIRE(y.dtype() == dt);
      REQUIRE(y.shape() == x.shape());
      double worst = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double want = f.ref(x.item_as_double(i));
        worst = std::max(worst, std::abs(y.item_as_double(i) - want) / (std::abs(want) + 1e-30));
      }
      CHECK(worst < (dt == DType::F32 ? 1e-6 : 1e-15));
    }
  }
}

TEST_CASE("trigonometric and hyperbolic ops in F16 and BF16 round float's result once") {
  for (const Fn& f : functions()) {
    CAPTURE(std::string(f.op));
    for (DType low : {DType::F16, DType::BF16}) {
      const Tensor x = sweep(f.lo, f.hi, 301, low);  // Sinh/Cosh overflow F16: inf on both
      const Tensor y = run1(f.op, 9, {}, {x});
      REQUIRE(y.dtype() == low);
      const Tensor want = cast_tensor(run1(f.op, 9, {}, {cast_tensor(x, DType::F32)}), low);
      for (int64_t i = 0; i < x.numel(); ++i) CHECK(y.item_as_double(i) == want.item_as_double(i));
    }
  }
}
