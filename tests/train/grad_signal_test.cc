// Gradients of DFT and STFT (DFTGrad / STFTGrad, the adjoint maps): double-precision
// finite-difference checks. Both ops are linear in their signal (STFT also in its window), so
// central differences are exact up to rounding. Lengths cover radix-2 (8, 16) and Bluestein
// (5, 6, 10, 12) transforms, cut (dft_length < n) and padded (dft_length > n) signals.
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;

namespace {

Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(v); }

GradCheckCase dft(int64_t opset, std::map<std::string, Attribute> attrs, Shape x,
                  int64_t dft_length = -1) {
  GradCheckCase c;
  c.op = "DFT";
  c.opset = opset;
  c.attrs = std::move(attrs);
  c.inputs = {test::in(std::move(x))};
  if (dft_length > 0) c.inputs.push_back(test::fixed(i64(dft_length)));
  return c;
}

}  // namespace

TEST_CASE("gradients: DFT") {
  SUBCASE("real, axis 1, radix-2") { test::check_gradients(dft(17, {}, {2, 8, 1})); }
  SUBCASE("complex, axis 2, Bluestein") {
    test::check_gradients(dft(17, {{"axis", int1(2)}}, {2, 3, 6, 2}));
  }
  SUBCASE("onesided, dft_length cuts") {
    test::check_gradients(dft(17, {{"onesided", int1(1)}}, {2, 12, 1}, 10));
  }
  SUBCASE("complex, dft_length pads") { test::check_gradients(dft(17, {}, {1, 5, 2}, 8)); }
  SUBCASE("inverse") { test::check_gradients(dft(17, {{"inverse", int1(1)}}, {2, 6, 2})); }
  SUBCASE("inverse onesided (irfft), even and odd lengths") {
    test::check_gradients(dft(17, {{"inverse", int1(1)}, {"onesided", int1(1)}}, {2, 5, 2}));
    test::check_gradients(
        dft(17, {{"inverse", int1(1)}, {"onesided", int1(1)}}, {1, 4, 2, 2}, 7));
  }
  SUBCASE("opset 20: axis input") {
    GradCheckCase c = dft(20, {}, {3, 4, 2});
    c.inputs.push_back(test::omitted());
    c.inputs.push_back(test::fixed(i64(0)));
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: STFT (signal and window)") {
  SUBCASE("window, onesided") {
    GradCheckCase c;
    c.op = "STFT";
    c.inputs = {test::in({2, 20, 1}), test::fixed(i64(3)), test::in({6})};
    test::check_gradients(c);
  }
  SUBCASE("complex signal, frame_length, two-sided, overlapping frames") {
    GradCheckCase c;
    c.op = "STFT";
    c.attrs = {{"onesided", int1(0)}};
    c.inputs = {test::in({1, 16, 2}), test::fixed(i64(2)), test::omitted(), test::fixed(i64(8))};
    test::check_gradients(c);
  }
}
