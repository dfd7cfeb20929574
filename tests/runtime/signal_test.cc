// Signal ops (opset 17): HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix
// (runtime/cpu/kernels/signal_window.cc), DFT and STFT (dft.cc): hand-computed values and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(v); }

void check_near(const Tensor& y, const std::vector<double>& want, double tol) {
  REQUIRE(y.numel() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(y.item_as_double(static_cast<int64_t>(i)) - want[i]) <= tol);
  }
}

std::string error_of(const std::string& op, int64_t opset, std::map<std::string, Attribute> attrs,
                     const std::vector<Tensor>& in) {
  try {
    run1(op, opset, attrs, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("window generators: values at known points") {
  // Periodic Hann of size 4: N = 4, w = 0.5 − 0.5 cos(πn/2) = 0, 0.5, 1, 0.5.
  Tensor y = run1("HannWindow", 17, {}, {i64(4)});
  CHECK(y.dtype() == DType::F32);
  CHECK(y.shape() == Shape{4});
  check_near(y, {0, 0.5, 1, 0.5}, 1e-7);
  // Symmetric Hann of size 5: N = 4, the same points plus w[4] = 0.
  check_near(run1("HannWindow", 17, {{"periodic", attr_i(0)}}, {i64(5)}), {0, 0.5, 1, 0.5, 0}, 1e-7);
  // Hamming, periodic size 4: 25/46 − 21/46 cos(πn/2) = 4/46, 25/46, 46/46, 25/46; F64 output.
  y = run1("HammingWindow", 17, {{"output_datatype", attr_i(11)}}, {i64(4)});
  CHECK(y.dtype() == DType::F64);
  check_near(y, {4.0 / 46, 25.0 / 46, 1.0, 25.0 / 46}, 1e-15);
  // Blackman, symmetric size 3: N = 2, n = 0: 0.42 − 0.5 + 0.08 = 0, n = 1: 0.42 + 0.5 + 0.08 = 1.
  check_near(run1("BlackmanWindow", 17, {{"periodic", attr_i(0)}, {"output_datatype", attr_i(11)}},
                  {Tensor::scalar<int32_t>(3)}),
             {0, 1, 0}, 1e-15);
  // Blackman, periodic size 4: n = 1: 0.42 − 0.5·0 + 0.08·cos(π) = 0.34.
  check_near(run1("BlackmanWindow", 17, {}, {i64(4)}), {0, 0.34, 1, 0.34}, 1e-7);
  // Symmetric size 1 is [1] (numpy / torch), F16 output.
  y = run1("HannWindow", 17, {{"periodic", attr_i(0)}, {"output_datatype", attr_i(10)}}, {i64(1)});
  CHECK(y.dtype() == DType::F16);
  check_near(y, {1}, 0);
  CHECK(run1("HannWindow", 17, {}, {i64(0)}).numel() == 0);
  CHECK(error_of("HannWindow", 17, {}, {i64(-1)}).find("size must be >= 0") != std::string::npos);
  CHECK(error_of("HannWindow", 17, {{"output_datatype", attr_i(8)}}, {i64(3)})
            .find("output_datatype 8") != std::string::npos);
}

TEST_CASE("MelWeightMatrix: triangular filters on integer bins") {
  // M = 2, L = 8 (5 bins), R = 8000, lo = 0, hi = 4000: mel(4000) = 2146.06.., step = mel/4,
  // edges in Hz 0, 426.8.., 1113.8.., 2219.8.. (k = 0..3), bins floor(9·hz/8000) = 0, 0, 1, 2.
  //   filter 0: b = 0, 0, 1: left flat (W[0,0] = 1), right W[0,0] = (1 − 0)/1 = 1.
  //   filter 1: b = 0, 1, 2: left W[0,1] = 0, W[1,1] = 1; right W[1,1] = 1.
  const Tensor y = run1("MelWeightMatrix", 17, {},
                        {Tensor::scalar<int32_t>(2), Tensor::scalar<int32_t>(8),
                         Tensor::scalar<int32_t>(8000), Tensor::scalar<float>(0.f),
                         Tensor::scalar<float>(4000.f)});
  CHECK(y.shape() == Shape{5, 2});
  check_near(y, {1, 0,  //
                 0, 1,  //
                 0, 0,  //
                 0, 0,  //
                 0, 0},
             0);
  // Wider bins: M = 1, L = 16 (9 bins), R = 8192, lo = 0, hi = 4096, step = mel(4096)/3:
  // Hz 0, 629.5.., 1825.1.. -> bins floor(17·hz/8192) = 0, 1, 3;
  // filter 0: W[0] = 0, W[1] = 1 (left), W[1] = (3 − 1)/2 = 1, W[2] = (3 − 2)/2 = 0.5 (right).
  const Tensor z = run1("MelWeightMatrix", 17, {{"output_datatype", attr_i(11)}},
                        {i64(1), i64(16), i64(8192), Tensor::scalar<double>(0.0),
                         Tensor::scalar<double>(4096.0)});
  CHECK(z.dtype() == DType::F64);
  check_near(z, {0, 1, 0.5, 0, 0, 0, 0, 0, 0}, 0);
}

TEST_CASE("DFT of known signals") {
  // x = [1, 2, 3, 4] real along axis 1: X = [10, −2+2i, −2, −2−2i].
  const Tensor x = Tensor::from_vector<float>({1, 4, 1}, {1, 2, 3, 4});
  Tensor y = run1("DFT", 17, {}, {x});
  CHECK(y.shape() == Shape{1, 4, 2});
  check_near(y, {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  // onesided: k ≤ 2.
  y = run1("DFT", 17, {{"onesided", attr_i(1)}}, {x});
  CHECK(y.shape() == Shape{1, 3, 2});
  check_near(y, {10, 0, -2, 2, -2, 0}, 1e-5);
  // dft_length 2 cuts to [1, 2]: X = [3, −1]; dft_length 5 (Bluestein) pads with a zero:
  // X[k] = Σ x[n] e^{−2πi kn/5}.
  check_near(run1("DFT", 17, {}, {x, i64(2)}), {3, 0, -1, 0}, 1e-6);
  y = run1("DFT", 17, {}, {x, i64(5)});
  CHECK(y.shape() == Shape{1, 5, 2});
  std::vector<double> want;
  for (int k = 0; k < 5; ++k) {
    std::complex<double> s = 0;
    for (int n = 0; n < 4; ++n) s += (n + 1.0) * std::polar(1.0, -2 * M_PI * k * n / 5);
    want.push_back(s.real());
    want.push_back(s.imag());
  }
  check_near(y, want, 1e-5);
  // Inverse of the complex spectrum gives the signal back (imag 0), F64; length 3 (Bluestein).
  const Tensor spec = Tensor::from_vector<double>({1, 3, 2}, {6, 0, -1.5, std::sqrt(0.75),
                                                              -1.5, -std::sqrt(0.75)});
  check_near(run1("DFT", 17, {{"inverse", attr_i(1)}}, {spec}), {1, 0, 2, 0, 3, 0}, 1e-12);
  // Inverse onesided (irfft) of [10, −2+2i, −2] -> [1, 2, 3, 4] as [.., 4, 1].
  y = run1("DFT", 17, {{"inverse", attr_i(1)}, {"onesided", attr_i(1)}},
           {Tensor::from_vector<float>({1, 3, 2}, {10, 0, -2, 2, -2, 0})});
  CHECK(y.shape() == Shape{1, 4, 1});
  check_near(y, {1, 2, 3, 4}, 1e-5);
  // axis 2 of [1, 2, 2, 1]: rows [1, 2] -> [3, −1], [3, 5] -> [8, −2]; axis −2 the same.
  const Tensor m = Tensor::from_vector<float>({1, 2, 2, 1}, {1, 2, 3, 5});
  check_near(run1("DFT", 17, {{"axis", attr_i(2)}}, {m}), {3, 0, -1, 0, 8, 0, -2, 0}, 1e-6);
  check_near(run1("DFT", 17, {{"axis", attr_i(-2)}}, {m}), {3, 0, -1, 0, 8, 0, -2, 0}, 1e-6);
  // axis 1 (columns): [1, 3] -> [4, −2], [2, 5] -> [7, −3].
  check_near(run1("DFT", 17, {}, {m}), {4, 0, 7, 0, -2, 0, -3, 0}, 1e-6);
  // opset 20: axis is input 2 (default −2).
  check_near(run1("DFT", 20, {}, {m, Tensor(), i64(1)}), {4, 0, 7, 0, -2, 0, -3, 0}, 1e-6);
  CHECK(error_of("DFT", 17, {{"axis", attr_i(3)}}, {m}).find("axis 3") != std::string::npos);
  CHECK(error_of("DFT", 17, {}, {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})})
            .find("[.., 1] (real) or [.., 2]") != std::string::npos);
}

TEST_CASE("DFT: radix-2 and Bluestein agree with the direct sum on longer signals") {
  for (int64_t len : {16, 12, 17, 64, 100}) {
    std::vector<double> v(static_cast<size_t>(2 * len));
    for (int64_t i = 0; i < 2 * len; ++i) v[i] = std::sin(0.37 * i) + 0.1 * i;
    const Tensor x = Tensor::from_vector<double>({1, len, 2}, v);
    std::vector<double> want;
    for (int64_t k = 0; k < len; ++k) {
      std::complex<double> s = 0;
      for (int64_t n = 0; n < len; ++n)
        s += std::complex<double>(v[2 * n], v[2 * n + 1]) * std::polar(1.0, -2 * M_PI * k * n / len);
      want.push_back(s.real());
      want.push_back(s.imag());
    }
    INFO("length " << len);
    check_near(run1("DFT", 17, {}, {x}), want, 1e-9);
  }
}

TEST_CASE("STFT: frames, window, onesided") {
  // signal [1, 6, 1] = 1..6, frame_step 2, frame_length 4: frames [1..4], [3..6];
  // DFT of [a, b, c, d] at k = 0, 1, 2: a+b+c+d, (a−c) + i(d−b), a−b+c−d.
  const Tensor x = Tensor::from_vector<float>({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  Tensor y = run1("STFT", 17, {}, {x, i64(2), Tensor(), i64(4)});
  CHECK(y.shape() == Shape{1, 2, 3, 2});
  check_near(y, {10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}, 1e-5);
  // Window [0, 1, 1, 0]: frames become [0, 2, 3, 0], [0, 4, 5, 0]: two-sided (onesided 0).
  y = run1("STFT", 17, {{"onesided", attr_i(0)}},
           {x, i64(2), Tensor::from_vector<float>({4}, {0, 1, 1, 0})});
  CHECK(y.shape() == Shape{1, 2, 4, 2});
  check_near(y, {5, 0, -3, -2, 1, 0, -3, 2, 9, 0, -5, -4, 1, 0, -5, 4}, 1e-5);
  CHECK(error_of("STFT", 17, {}, {x, i64(2), Tensor::from_vector<float>({3}, {1, 1, 1}), i64(4)})
            .find("differs from the window") != std::string::npos);
  CHECK(error_of("STFT", 17, {}, {x, i64(2), Tensor(), i64(7)}).find("frame length 7") !=
        std::string::npos);
}
