// The cuDNN emulator (runtime/cuda/emulator/cudnn_*.cc) against naive reference loops written
// here independently (N-d index arithmetic, no shared code), hand-computed small cases, the
// adjoint identities tying the three convolution directions together,
//   <dY, conv(X, W)> = <convᵀ(W, dY), X> = <corr(X, dY), W>,
// and cuDNN's documented parameter checks. Emulated build only (the real cuDNN is not checked here).
#include <doctest/doctest.h>

#ifdef OAT_CUDA_EMULATED
#include <cudnn.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using Dims = std::vector<int>;

int64_t prod(const Dims& d) {
  int64_t n = 1;
  for (int v : d) n *= v;
  return n;
}

Dims packed(const Dims& d) {
  Dims s(d.size());
  int64_t v = 1;
  for (int i = static_cast<int>(d.size()) - 1; i >= 0; --i) {
    s[i] = static_cast<int>(v);
    v *= d[i];
  }
  return s;
}

// ---- RAII descriptors ----
struct Handle {
  cudnnHandle_t h = nullptr;
  Handle() { REQUIRE(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS); }
  ~Handle() { cudnnDestroy(h); }
};
struct TDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TDesc() { REQUIRE(cudnnCreateTensorDescriptor(&d) == CUDNN_STATUS_SUCCESS); }
  TDesc(cudnnDataType_t t, const Dims& dims, Dims strides = {}) : TDesc() {
    if (strides.empty()) strides = packed(dims);
    REQUIRE(cudnnSetTensorNdDescriptor(d, t, static_cast<int>(dims.size()), dims.data(),
                                       strides.data()) == CUDNN_STATUS_SUCCESS);
  }
  ~TDesc() { cudnnDestroyTensorDescriptor(d); }
};
struct FDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FDesc() { REQUIRE(cudnnCreateFilterDescriptor(&d) == CUDNN_STATUS_SUCCESS); }
  FDesc(cudnnDataType_t t, const Dims& dims) : FDesc() {
    REQUIRE(cudnnSetFilterNdDescriptor(d, t, CUDNN_TENSOR_NCHW, static_cast<int>(dims.size()),
                                       dims.data()) == CUDNN_STATUS_SUCCESS);
  }
  ~FDesc() { cudnnDestroyFilterDescriptor(d); }
};
struct CDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  CDesc(const Dims& pad, const Dims& stride, const Dims& dil, int groups = 1,
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION,
        cudnnDataType_t compute = CUDNN_DATA_FLOAT) {
    REQUIRE(cudnnCreateConvolutionDescriptor(&d) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionNdDescriptor(d, static_cast<int>(pad.size()), pad.data(),
                                            stride.data(), dil.data(), mode, compute) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionGroupCount(d, groups) == CUDNN_STATUS_SUCCESS);
  }
  ~CDesc() { cudnnDestroyConvolutionDescriptor(d); }
};
struct PDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PDesc(cudnnPoolingMode_t mode, const Dims& win, const Dims& pad, const Dims& stride,
        cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN) {
    REQUIRE(cudnnCreatePoolingDescriptor(&d) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetPoolingNdDescriptor(d, mode, nan, static_cast<int>(win.size()), win.data(),
                                        pad.data(), stride.data()) == CUDNN_STATUS_SUCCESS);
  }
  ~PDesc() { cudnnDestroyPoolingDescriptor(d); }
};

// ---- typed host buffers ("device" memory in the emulator) ----
struct Buf {
  cudnnDataType_t t;
  std::vector<unsigned char> bytes;
  Buf(cudnnDataType_t type, int64_t n) : t(type), bytes(static_cast<size_t>(n) * size()) {}
  size_t size() const {
    return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2;
  }
  int64_t n() const { return static_cast<int64_t>(bytes.size() / size()); }
  void* p() { return bytes.data(); }
  double get(int64_t i) const {
    const void* q = bytes.data();
    switch (t) {
      case CUDNN_DATA_DOUBLE: return static_cast<const double*>(q)[i];
      case CUDNN_DATA_FLOAT: return static_cast<const float*>(q)[i];
      case CUDNN_DATA_HALF: return static_cast<float>(static_cast<const __half*>(q)[i]);
      default: return static_cast<float>(static_cast<const __nv_bfloat16*>(q)[i]);
    }
  }
  void set(int64_t i, double v) {
    void* q = bytes.data();
    switch (t) {
      case CUDNN_DATA_DOUBLE: static_cast<double*>(q)[i] = v; break;
      case CUDNN_DATA_FLOAT: static_cast<float*>(q)[i] = static_cast<float>(v); break;
      case CUDNN_DATA_HALF: static_cast<__half*>(q)[i] = __double2half(v); break;
      default: static_cast<__nv_bfloat16*>(q)[i] = __double2bfloat16(v); break;
    }
  }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(n()));
    for (int64_t i = 0; i < n(); ++i) v[i] = get(i);
    return v;
  }
  void fill(double v) {
    for (int64_t i = 0; i < n(); ++i) set(i, v);
  }
};

// Random values on a coarse grid (k/8, |k| <= 16): exact in every data type, so products and
// short sums are exact in double and the one rounding is the only one.
Buf random_buf(cudnnDataType_t t, int64_t n, std::mt19937& rng) {
  Buf b(t, n);
  std::uniform_int_distribution<int> d(-16, 16);
  for (int64_t i = 0; i < n; ++i) b.set(i, d(rng) / 8.0);
  return b;
}

double round_to(cudnnDataType_t t, double v) {
  Buf b(t, 1);
  b.set(0, v);
  return b.get(0);
}

// ---- reference convolution: every term (xi, wi, yi) by N-d unravelling ----
struct Conv {
  Dims x, w, pad, stride, dil;
  int groups = 1;
  bool flip = false;
  Dims y() const {
    Dims r = {x[0], w[0]};
    for (size_t d = 0; d + 2 < x.size(); ++d)
      r.push_back((x[d + 2] + 2 * pad[d] - dil[d] * (w[d + 2] - 1) - 1) / stride[d] + 1);
    return r;
  }
};

template <class F>
void ref_terms(const Conv& c, F&& f) {
  const Dims yd = c.y();
  const int nsp = static_cast<int>(c.x.size()) - 2;
  const int Cg = c.w[1], Kg = c.w[0] / c.groups;
  const Dims xs = packed(c.x), ws = packed(c.w), ys = packed(yd);
  Dims ker(c.w.begin() + 2, c.w.end());
  for (int64_t yi = 0; yi < prod(yd); ++yi) {
    Dims yidx(yd.size());
    for (size_t d = 0; d < yd.size(); ++d) yidx[d] = static_cast<int>(yi / ys[d] % yd[d]);
    const int n = yidx[0], k = yidx[1];
    for (int c_ = 0; c_ < Cg; ++c_)
      for (int64_t j = 0; j < prod(ker); ++j) {
        const Dims ks = packed(ker);
        int64_t xi = int64_t{n} * xs[0] + int64_t{k / Kg * Cg + c_} * xs[1];
        int64_t wi = int64_t{k} * ws[0] + int64_t{c_} * ws[1];
        bool inside = true;
        for (int d = 0; d < nsp; ++d) {
          const int jd = static_cast<int>(j / ks[d] % ker[d]);
          const int i = yidx[2 + d] * c.stride[d] - c.pad[d] + jd * c.dil[d];
          if (i < 0 || i >= c.x[2 + d]) inside = false;
          xi += int64_t{i} * xs[2 + d];
          wi += int64_t{c.flip ? ker[d] - 1 - jd : jd} * ws[2 + d];
        }
        if (inside) f(xi, wi, yi);
      }
  }
}

std::vector<double> ref_forward(const Conv& c, const std::vector<double>& x,
                                const std::vector<double>& w) {
  std::vector<double> y(static_cast<size_t>(prod(c.y())), 0.0);
  ref_terms(c, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += x[xi] * w[wi]; });
  return y;
}
std::vector<double> ref_backward_data(const Conv& c, const std::vector<double>& w,
                                      const std::vector<double>& dy) {
  std::vector<double> dx(static_cast<size_t>(prod(c.x)), 0.0);
  ref_terms(c, [&](int64_t xi, int64_t wi, int64_t yi) { dx[xi] += w[wi] * dy[yi]; });
  return dx;
}
std::vector<double> ref_backward_filter(const Conv& c, const std::vector<double>& x,
                                        const std::vector<double>& dy) {
  std::vector<double> dw(static_cast<size_t>(prod(c.w)), 0.0);
  ref_terms(c, [&](int64_t xi, int64_t wi, int64_t yi) { dw[wi] += x[xi] * dy[yi]; });
  return dw;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

const float kOne = 1.f, kZero = 0.f;

// The three directions through the emulator with the first-ranked algorithm and its workspace.
struct ConvRun {
  Handle h;
  Conv c;
  cudnnDataType_t t;
  TDesc xd, yd;
  FDesc wd;
  CDesc cd;
  ConvRun(const Conv& conv, cudnnDataType_t type,
          cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION)
      : c(conv),
        t(type),
        xd(type, conv.x),
        yd(type, conv.y()),
        wd(type, conv.w),
        cd(conv.pad, conv.stride, conv.dil, conv.groups, mode,
           type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT) {
    c.flip = mode == CUDNN_CONVOLUTION;
  }
  cudnnStatus_t forward(const void* alpha, Buf& x, Buf& w, const void* beta, Buf& y) {
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n = 0;
    REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(h.h, xd.d, wd.d, cd.d, yd.d, 8, &n, perf) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(n > 0);
    std::vector<unsigned char> ws(perf[0].memory + 1);
    return cudnnConvolutionForward(h.h, alpha, xd.d, x.p(), wd.d, w.p(), cd.d, perf[0].algo,
                                   ws.data(), perf[0].memory, beta, yd.d, y.p());
  }
  cudnnStatus_t backward_data(const void* alpha, Buf& w, Buf& dy, const void* beta, Buf& dx) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[8];
    int n = 0;
    REQUIRE(cudnnGetConvolutionBackwardDataAlgorithm_v7(h.h, wd.d, yd.d, cd.d, xd.d, 8, &n,
                                                        perf) == CUDNN_STATUS_SUCCESS);
    REQUIRE(n > 0);
    std::vector<unsigned char> ws(perf[0].memory + 1);
    return cudnnConvolutionBackwardData(h.h, alpha, wd.d, w.p(), yd.d, dy.p(), cd.d, perf[0].algo,
                                        ws.data(), perf[0].memory, beta, xd.d, dx.p());
  }
  cudnnStatus_t backward_filter(const void* alpha, Buf& x, Buf& dy, const void* beta, Buf& dw) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
    int n = 0;
    REQUIRE(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.h, xd.d, yd.d, cd.d, wd.d, 8, &n,
                                                          perf) == CUDNN_STATUS_SUCCESS);
    REQUIRE(n > 0);
    std::vector<unsigned char> ws(perf[0].memory + 1);
    return cudnnConvolutionBackwardFilter(h.h, alpha, xd.d, x.p(), yd.d, dy.p(), cd.d,
                                          perf[0].algo, ws.data(), perf[0].memory, beta, wd.d,
                                          dw.p());
  }
};

// All three directions against the reference (exact: grid values, one rounding) and the adjoint
// identities.
void check_all_directions(const Conv& conv, cudnnDataType_t t,
                          cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION) {
  std::mt19937 rng(7);
  ConvRun r(conv, t, mode);
  Buf x = random_buf(t, prod(conv.x), rng), w = random_buf(t, prod(conv.w), rng);
  Buf dy = random_buf(t, prod(conv.y()), rng);
  Buf y(t, prod(conv.y())), dx(t, prod(conv.x)), dw(t, prod(conv.w));
  const double one = 1, zero = 0;
  const void* a = t == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&one) : &kOne;
  const void* b = t == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&zero) : &kZero;
  REQUIRE(r.forward(a, x, w, b, y) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_data(a, w, dy, b, dx) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_filter(a, x, dy, b, dw) == CUDNN_STATUS_SUCCESS);
  const std::vector<double> ry = ref_forward(r.c, x.values(), w.values());
  const std::vector<double> rdx = ref_backward_data(r.c, w.values(), dy.values());
  const std::vector<double> rdw = ref_backward_filter(r.c, x.values(), dy.values());
  for (size_t i = 0; i < ry.size(); ++i) CHECK(y.get(i) == round_to(t, ry[i]));
  for (size_t i = 0; i < rdx.size(); ++i) CHECK(dx.get(i) == round_to(t, rdx[i]));
  for (size_t i = 0; i < rdw.size(); ++i) CHECK(dw.get(i) == round_to(t, rdw[i]));
  if (t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_FLOAT) {  // adjoint identities, in double
    const double lhs = dot(dy.values(), y.values());
    CHECK(dot(dx.values(), x.values()) == doctest::Approx(lhs).epsilon(1e-9));
    CHECK(dot(dw.values(), w.values()) == doctest::Approx(lhs).epsilon(1e-9));
  }
}

}  // namespace

TEST_CASE("cudnn emulator: hand-computed 2-D correlation and convolution") {
  Handle h;
  TDesc xd(CUDNN_DATA_FLOAT, {1, 1, 3, 3}), yd(CUDNN_DATA_FLOAT, {1, 1, 2, 2});
  FDesc wd(CUDNN_DATA_FLOAT, {1, 1, 2, 2});
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4};
  float y[4];
  {
    CDesc cd({0, 0}, {1, 1}, {1, 1});
    REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, cd.d,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                    yd.d, y) == CUDNN_STATUS_SUCCESS);
    // y00 = 1·1 + 2·2 + 4·3 + 5·4
    CHECK(y[0] == 37);
    CHECK(y[1] == 47);
    CHECK(y[2] == 67);
    CHECK(y[3] == 77);
  }
  {
    CDesc cd({0, 0}, {1, 1}, {1, 1}, 1, CUDNN_CONVOLUTION);  // kernel flipped: [[4,3],[2,1]]
    REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, cd.d,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                    yd.d, y) == CUDNN_STATUS_SUCCESS);
    CHECK(y[0] == 4 * 1 + 3 * 2 + 2 * 4 + 1 * 5);
    CHECK(y[3] == 4 * 5 + 3 * 6 + 2 * 8 + 1 * 9);
  }
  {  // pad 1, stride 2, dilation 2 on 3x3: out = (3 + 2 − 2·1 − 1)/2 + 1 = 2
    CDesc cd({1, 1}, {2, 2}, {2, 2});
    REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, cd.d,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                    yd.d, y) == CUDNN_STATUS_SUCCESS);
    // y[0,0] taps x(-1,-1), x(-1,1), x(1,-1), x(1,1): only x(1,1) = 5 is inside, times w[1,1] = 4
    CHECK(y[0] == 20);
    // y[0,1] taps rows -1, 1 and cols 1, 3: x(1,1) = 5 times w[1,0] = 3
    CHECK(y[1] == 15);
    CHECK(y[2] == 5 * 2);
    CHECK(y[3] == 5 * 1);
  }
}

TEST_CASE("cudnn emulator: 2-D pad/stride/dilation/groups in F32, F64, F16, BF16 against loops") {
  const Conv c{{2, 4, 7, 6}, {6, 2, 3, 2}, {1, 2}, {2, 1}, {1, 2}, 2};
  for (cudnnDataType_t t :
       {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    CAPTURE(static_cast<int>(t));
    check_all_directions(c, t);
    check_all_directions(c, t, CUDNN_CONVOLUTION);
  }
  // depthwise: groups = C = K
  check_all_directions(Conv{{1, 3, 5, 5}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3},
                       CUDNN_DATA_FLOAT);
}

TEST_CASE("cudnn emulator: 1-D and 3-D convolutions") {
  check_all_directions(Conv{{2, 3, 11}, {4, 3, 3}, {2}, {3}, {2}, 1}, CUDNN_DATA_FLOAT);
  check_all_directions(Conv{{2, 3, 11}, {4, 3, 3}, {2}, {3}, {2}, 1}, CUDNN_DATA_DOUBLE,
                       CUDNN_CONVOLUTION);
  check_all_directions(Conv{{1, 4, 5, 4, 6}, {2, 2, 2, 3, 2}, {1, 0, 1}, {1, 2, 2}, {2, 1, 1}, 2},
                       CUDNN_DATA_FLOAT);
  check_all_directions(Conv{{1, 4, 5, 4, 6}, {2, 2, 2, 3, 2}, {1, 0, 1}, {1, 2, 2}, {2, 1, 1}, 2},
                       CUDNN_DATA_HALF, CUDNN_CONVOLUTION);
}

TEST_CASE("cudnn emulator: HALF output is rounded once, to nearest even") {
  // 1 + 2^-11 is halfway between the halves 1 and 1 + 2^-10: ties to even gives 1; any excess
  // over the tie (here 2^-21) rounds up.
  Handle h;
  TDesc xd(CUDNN_DATA_HALF, {1, 2, 1, 1}), yd(CUDNN_DATA_HALF, {1, 1, 1, 1});
  FDesc wd(CUDNN_DATA_HALF, {1, 2, 1, 1});
  CDesc cd({0, 0}, {1, 1}, {1, 1}, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  __half x[2] = {__double2half(1.0), __double2half(std::ldexp(1.0, -11))};
  const __half w[2] = {__double2half(1.0), __double2half(1.0)};
  __half y[1];
  REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, cd.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  yd.d, y) == CUDNN_STATUS_SUCCESS);
  CHECK(static_cast<float>(y[0]) == 1.0f);  // tie to even
  x[1] = __double2half(std::ldexp(1.0, -11) + std::ldexp(1.0, -21));
  REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, cd.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  yd.d, y) == CUDNN_STATUS_SUCCESS);
  CHECK(static_cast<float>(y[0]) == static_cast<float>(1.0 + std::ldexp(1.0, -10)));
  // HALF compute type is accepted for HALF data too
  CDesc ch({0, 0}, {1, 1}, {1, 1}, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF);
  CHECK(cudnnConvolutionForward(h.h, &kOne, xd.d, x, wd.d, w, ch.d,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                yd.d, y) == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("cudnn emulator: alpha/beta blending; beta = 0 never reads the output") {
  const Conv c{{1, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  std::mt19937 rng(3);
  ConvRun r(c, CUDNN_DATA_FLOAT);
  Buf x = random_buf(CUDNN_DATA_FLOAT, prod(c.x), rng), w = random_buf(CUDNN_DATA_FLOAT, prod(c.w), rng);
  Buf dy = random_buf(CUDNN_DATA_FLOAT, prod(c.y()), rng);
  const std::vector<double> ry = ref_forward(r.c, x.values(), w.values());
  const std::vector<double> rdx = ref_backward_data(r.c, w.values(), dy.values());
  const std::vector<double> rdw = ref_backward_filter(r.c, x.values(), dy.values());
  const float alpha = 2.f, beta = 0.5f;
  Buf y = random_buf(CUDNN_DATA_FLOAT, prod(c.y()), rng), dx = random_buf(CUDNN_DATA_FLOAT, prod(c.x), rng);
  Buf dw = random_buf(CUDNN_DATA_FLOAT, prod(c.w), rng);
  const std::vector<double> y0 = y.values(), dx0 = dx.values(), dw0 = dw.values();
  REQUIRE(r.forward(&alpha, x, w, &beta, y) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_data(&alpha, w, dy, &beta, dx) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_filter(&alpha, x, dy, &beta, dw) == CUDNN_STATUS_SUCCESS);
  for (size_t i = 0; i < ry.size(); ++i) CHECK(y.get(i) == 2 * ry[i] + 0.5 * y0[i]);
  for (size_t i = 0; i < rdx.size(); ++i) CHECK(dx.get(i) == 2 * rdx[i] + 0.5 * dx0[i]);
  for (size_t i = 0; i < rdw.size(); ++i) CHECK(dw.get(i) == 2 * rdw[i] + 0.5 * dw0[i]);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  y.fill(nan);
  dx.fill(nan);
  dw.fill(nan);
  REQUIRE(r.forward(&kOne, x, w, &kZero, y) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_data(&kOne, w, dy, &kZero, dx) == CUDNN_STATUS_SUCCESS);
  REQUIRE(r.backward_filter(&kOne, x, dy, &kZero, dw) == CUDNN_STATUS_SUCCESS);
  for (size_t i = 0; i < ry.size(); ++i) CHECK(y.get(i) == ry[i]);
  for (size_t i = 0; i < rdx.size(); ++i) CHECK(dx.get(i) == rdx[i]);
  for (size_t i = 0; i < rdw.size(); ++i) CHECK(dw.get(i) == rdw[i]);
}

TEST_CASE("cudnn emulator: strided (non-packed) tensor descriptors") {
  // X [1, 3, 4, 5] stored NHWC (strides 60, 1, 15, 3); Y [1, 2, 4, 5] with row pitch 7 and
  // channel pitch 30 (gaps hold a sentinel that must survive).
  const Conv c{{1, 3, 4, 5}, {2, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  std::mt19937 rng(11);
  Handle h;
  TDesc xd(CUDNN_DATA_FLOAT, c.x, {60, 1, 15, 3}), yd(CUDNN_DATA_FLOAT, c.y(), {60, 30, 7, 1});
  FDesc wd(CUDNN_DATA_FLOAT, c.w);
  CDesc cd(c.pad, c.stride, c.dil);
  Buf xp = random_buf(CUDNN_DATA_FLOAT, prod(c.x), rng), w = random_buf(CUDNN_DATA_FLOAT, prod(c.w), rng);
  Buf xs(CUDNN_DATA_FLOAT, 60);  // x in NHWC
  for (int ch = 0; ch < 3; ++ch)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) xs.set(ch + 15 * i + 3 * j, xp.get((ch * 4 + i) * 5 + j));
  Buf ys(CUDNN_DATA_FLOAT, 60);
  ys.fill(-123.);
  REQUIRE(cudnnConvolutionForward(h.h, &kOne, xd.d, xs.p(), wd.d, w.p(), cd.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  yd.d, ys.p()) == CUDNN_STATUS_SUCCESS);
  const std::vector<double> ry = ref_forward(c, xp.values(), w.values());
  std::vector<bool> used(60, false);
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) {
        CHECK(ys.get(30 * k + 7 * i + j) == ry[(k * 4 + i) * 5 + j]);
        used[30 * k + 7 * i + j] = true;
      }
  for (int i = 0; i < 60; ++i)
    if (!used[i]) CHECK(ys.get(i) == -123.);
  // backward data into the NHWC dX equals the packed result
  Buf dxs(CUDNN_DATA_FLOAT, 60);
  REQUIRE(cudnnConvolutionBackwardData(h.h, &kOne, wd.d, w.p(), yd.d, ys.p(), cd.d,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &kZero,
                                       xd.d, dxs.p()) == CUDNN_STATUS_SUCCESS);
  std::vector<double> ryp(ry.begin(), ry.end());
  const std::vector<double> rdx = ref_backward_data(c, w.values(), ryp);
  for (int ch = 0; ch < 3; ++ch)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j)
        CHECK(dxs.get(ch + 15 * i + 3 * j) ==
              doctest::Approx(rdx[(ch * 4 + i) * 5 + j]).epsilon(1e-6));
}

TEST_CASE("cudnn emulator: algorithm queries, workspace sizes and checks") {
  const Conv c{{2, 4, 6, 6}, {4, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2};
  ConvRun r(c, CUDNN_DATA_HALF);
  REQUIRE(cudnnSetConvolutionMathType(r.cd.d, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS);
  cudnnConvolutionFwdAlgoPerf_t fp[8];
  int n = -1;
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d, 8, &n,
                                                 fp) == CUDNN_STATUS_SUCCESS);
  REQUIRE(n >= 2);
  bool some_workspace = false;
  for (int i = 0; i < n; ++i) {
    CHECK(fp[i].status == CUDNN_STATUS_SUCCESS);
    CHECK(fp[i].mathType == CUDNN_TENSOR_OP_MATH);
    size_t bytes = 1234;
    REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d,
                                                    fp[i].algo, &bytes) == CUDNN_STATUS_SUCCESS);
    CHECK(bytes == fp[i].memory);
    some_workspace = some_workspace || bytes > 0;
  }
  CHECK(some_workspace);
  int one = 0;
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d, 1, &one,
                                                 fp) == CUDNN_STATUS_SUCCESS);
  CHECK(one == 1);
  CHECK(cudnnGetConvolutionForwardAlgorithm_v7(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d, 0, &one,
                                               fp) == CUDNN_STATUS_BAD_PARAM);
  cudnnConvolutionBwdDataAlgoPerf_t dp[8];
  REQUIRE(cudnnGetConvolutionBackwardDataAlgorithm_v7(r.h.h, r.wd.d, r.yd.d, r.cd.d, r.xd.d, 8,
                                                      &n, dp) == CUDNN_STATUS_SUCCESS);
  REQUIRE(n >= 1);
  for (int i = 0; i < n; ++i) {
    size_t bytes = 0;
    REQUIRE(cudnnGetConvolutionBackwardDataWorkspaceSize(r.h.h, r.wd.d, r.yd.d, r.cd.d, r.xd.d,
                                                         dp[i].algo, &bytes) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(bytes == dp[i].memory);
  }
  cudnnConvolutionBwdFilterAlgoPerf_t wp[8];
  REQUIRE(cudnnGetConvolutionBackwardFilterAlgorithm_v7(r.h.h, r.xd.d, r.yd.d, r.cd.d, r.wd.d, 8,
                                                        &n, wp) == CUDNN_STATUS_SUCCESS);
  REQUIRE(n >= 1);
  for (int i = 0; i < n; ++i) {
    size_t bytes = 0;
    REQUIRE(cudnnGetConvolutionBackwardFilterWorkspaceSize(r.h.h, r.xd.d, r.yd.d, r.cd.d, r.wd.d,
                                                           wp[i].algo, &bytes) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(bytes == wp[i].memory);
  }

  // Every offered algorithm gives the same result; too small or missing workspace is BAD_PARAM.
  std::mt19937 rng(5);
  Buf x = random_buf(CUDNN_DATA_HALF, prod(c.x), rng), w = random_buf(CUDNN_DATA_HALF, prod(c.w), rng);
  Buf y0(CUDNN_DATA_HALF, prod(c.y()));
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d, 8, &n,
                                                 fp) == CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < n; ++i) {
    Buf y(CUDNN_DATA_HALF, prod(c.y()));
    std::vector<unsigned char> ws(fp[i].memory + 1);
    REQUIRE(cudnnConvolutionForward(r.h.h, &kOne, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                    fp[i].algo, ws.data(), fp[i].memory, &kZero, r.yd.d,
                                    y.p()) == CUDNN_STATUS_SUCCESS);
    if (i == 0) y0 = y;
    CHECK(y.bytes == y0.bytes);
    if (fp[i].memory > 0) {
      CHECK(cudnnConvolutionForward(r.h.h, &kOne, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                    fp[i].algo, ws.data(), fp[i].memory - 1, &kZero, r.yd.d,
                                    y.p()) == CUDNN_STATUS_BAD_PARAM);
      CHECK(cudnnConvolutionForward(r.h.h, &kOne, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                    fp[i].algo, nullptr, fp[i].memory, &kZero, r.yd.d,
                                    y.p()) == CUDNN_STATUS_BAD_PARAM);
    }
  }
  Buf y(CUDNN_DATA_HALF, prod(c.y()));
  CHECK(cudnnConvolutionForward(r.h.h, &kOne, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                static_cast<cudnnConvolutionFwdAlgo_t>(99), nullptr, 0, &kZero,
                                r.yd.d, y.p()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnConvolutionForward(r.h.h, &kOne, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                CUDNN_CONVOLUTION_FWD_ALGO_FFT, nullptr, 0, &kZero, r.yd.d,
                                y.p()) == CUDNN_STATUS_NOT_SUPPORTED);
  Buf dx(CUDNN_DATA_HALF, prod(c.x)), dw(CUDNN_DATA_HALF, prod(c.w));
  for (int i = 0; i < n; ++i) {  // backward filter: every algorithm alike
    std::vector<unsigned char> ws(wp[i].memory + 1);
    Buf d(CUDNN_DATA_HALF, prod(c.w));
    REQUIRE(cudnnConvolutionBackwardFilter(r.h.h, &kOne, r.xd.d, x.p(), r.yd.d, y0.p(), r.cd.d,
                                           wp[i].algo, ws.data(), wp[i].memory, &kZero, r.wd.d,
                                           d.p()) == CUDNN_STATUS_SUCCESS);
    if (i == 0) dw = d;
    CHECK(d.bytes == dw.bytes);
  }
}

TEST_CASE("cudnn emulator: Find*AlgorithmEx ranks as Get*_v7, overwrites its output, reports "
          "what the workspace cannot hold as not run") {
  const Conv c{{2, 4, 6, 6}, {4, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2};
  ConvRun r(c, CUDNN_DATA_FLOAT);
  std::mt19937 rng(3);
  Buf x = random_buf(CUDNN_DATA_FLOAT, prod(c.x), rng);
  Buf w = random_buf(CUDNN_DATA_FLOAT, prod(c.w), rng);
  Buf y = random_buf(CUDNN_DATA_FLOAT, prod(c.y()), rng);
  std::vector<unsigned char> ws(1 << 20);
  cudnnConvolutionFwdAlgoPerf_t gp[8], fp[8];
  int gn = 0, fn = 0;
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(r.h.h, r.xd.d, r.wd.d, r.cd.d, r.yd.d, 8, &gn,
                                                 gp) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(r.h.h, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                                 r.yd.d, y.p(), 8, &fn, fp, ws.data(),
                                                 ws.size()) == CUDNN_STATUS_SUCCESS);
  REQUIRE(fn == gn);
  bool some_workspace = false;
  for (int i = 0; i < fn; ++i) {
    CHECK(fp[i].algo == gp[i].algo);
    CHECK(fp[i].status == CUDNN_STATUS_SUCCESS);
    some_workspace = some_workspace || gp[i].memory > 0;
  }
  REQUIRE(some_workspace);
  for (int64_t i = 0; i < y.n(); ++i) REQUIRE(std::isnan(y.get(i)));
  // No workspace: the candidates that need one were not run.
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(r.h.h, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                                 r.yd.d, y.p(), 8, &fn, fp, nullptr, 0) ==
          CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < fn; ++i) CHECK((fp[i].status == CUDNN_STATUS_SUCCESS) == (gp[i].memory == 0));
  CHECK(cudnnFindConvolutionForwardAlgorithmEx(r.h.h, r.xd.d, x.p(), r.wd.d, w.p(), r.cd.d,
                                               r.yd.d, nullptr, 8, &fn, fp, nullptr, 0) ==
        CUDNN_STATUS_BAD_PARAM);
  // The backward directions: the same ranking as their queries, the output overwritten.
  cudnnConvolutionBwdDataAlgoPerf_t gd[8], fd[8];
  REQUIRE(cudnnGetConvolutionBackwardDataAlgorithm_v7(r.h.h, r.wd.d, r.yd.d, r.cd.d, r.xd.d, 8,
                                                      &gn, gd) == CUDNN_STATUS_SUCCESS);
  Buf dx = random_buf(CUDNN_DATA_FLOAT, prod(c.x), rng);
  REQUIRE(cudnnFindConvolutionBackwardDataAlgorithmEx(r.h.h, r.wd.d, w.p(), r.yd.d, y.p(),
                                                      r.cd.d, r.xd.d, dx.p(), 8, &fn, fd,
                                                      ws.data(), ws.size()) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(fn == gn);
  for (int i = 0; i < fn; ++i) CHECK(fd[i].algo == gd[i].algo);
  CHECK(std::isnan(dx.get(0)));
  cudnnConvolutionBwdFilterAlgoPerf_t gf[8], ff[8];
  REQUIRE(cudnnGetConvolutionBackwardFilterAlgorithm_v7(r.h.h, r.xd.d, r.yd.d, r.cd.d, r.wd.d, 8,
                                                        &gn, gf) == CUDNN_STATUS_SUCCESS);
  Buf dw = random_buf(CUDNN_DATA_FLOAT, prod(c.w), rng);
  REQUIRE(cudnnFindConvolutionBackwardFilterAlgorithmEx(r.h.h, r.xd.d, x.p(), r.yd.d, y.p(),
                                                        r.cd.d, r.wd.d, dw.p(), 8, &fn, ff,
                                                        ws.data(), ws.size()) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(fn == gn);
  for (int i = 0; i < fn; ++i) CHECK(ff[i].algo == gf[i].algo);
  CHECK(std::isnan(dw.get(dw.n() - 1)));
}

TEST_CASE("cudnn emulator: convolution parameter checks") {
  Handle h;
  const Dims xs = {2, 4, 6, 6}, wsz = {6, 2, 3, 3}, ys = {2, 6, 4, 4};
  TDesc x(CUDNN_DATA_FLOAT, xs), y(CUDNN_DATA_FLOAT, ys);
  FDesc w(CUDNN_DATA_FLOAT, wsz);
  CDesc c({0, 0}, {1, 1}, {1, 1}, 2);
  std::vector<float> xb(prod(xs)), wb(prod(wsz)), yb(prod(ys));
  auto fwd = [&](cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                 cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd) {
    return cudnnConvolutionForward(h.h, &kOne, xd, xb.data(), wd, wb.data(), cd,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                   yd, yb.data());
  };
  REQUIRE(fwd(x.d, w.d, c.d, y.d) == CUDNN_STATUS_SUCCESS);
  SUBCASE("ranks disagree") {
    TDesc x5(CUDNN_DATA_FLOAT, {2, 4, 6, 6, 1});
    CHECK(fwd(x5.d, w.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    CDesc c3({0, 0, 0}, {1, 1, 1}, {1, 1, 1}, 2);
    CHECK(fwd(x.d, w.d, c3.d, y.d) == CUDNN_STATUS_BAD_PARAM);
  }
  SUBCASE("channels: C != C/G·G, K % G != 0") {
    FDesc w3(CUDNN_DATA_FLOAT, {6, 3, 3, 3});
    CHECK(fwd(x.d, w3.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    CDesc c1({0, 0}, {1, 1}, {1, 1}, 1);
    CHECK(fwd(x.d, w.d, c1.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    TDesc x8(CUDNN_DATA_FLOAT, {2, 6, 6, 6}), y5(CUDNN_DATA_FLOAT, {2, 5, 4, 4});
    FDesc w5(CUDNN_DATA_FLOAT, {5, 2, 3, 3});
    CDesc c3g({0, 0}, {1, 1}, {1, 1}, 3);
    CHECK(fwd(x8.d, w5.d, c3g.d, y5.d) == CUDNN_STATUS_BAD_PARAM);
  }
  SUBCASE("y dims are not the convolution's") {
    for (const Dims& bad : {Dims{1, 6, 4, 4}, Dims{2, 5, 4, 4}, Dims{2, 6, 5, 4}, Dims{2, 6, 4, 3}}) {
      TDesc yb2(CUDNN_DATA_FLOAT, bad);
      CHECK(fwd(x.d, w.d, c.d, yb2.d) == CUDNN_STATUS_BAD_PARAM);
    }
    FDesc big(CUDNN_DATA_FLOAT, {6, 2, 7, 3});  // kernel taller than the input
    CHECK(fwd(x.d, big.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
  }
  SUBCASE("null pointers and unset descriptors") {
    CHECK(cudnnConvolutionForward(h.h, nullptr, x.d, xb.data(), w.d, wb.data(), c.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  y.d, yb.data()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnConvolutionForward(h.h, &kOne, x.d, nullptr, w.d, wb.data(), c.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  y.d, yb.data()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnConvolutionForward(nullptr, &kOne, x.d, xb.data(), w.d, wb.data(), c.d,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero,
                                  y.d, yb.data()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnConvolutionBackwardData(h.h, &kOne, w.d, wb.data(), y.d, nullptr, c.d,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &kZero,
                                       x.d, xb.data()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnConvolutionBackwardFilter(h.h, &kOne, x.d, xb.data(), y.d, yb.data(), c.d,
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, nullptr,
                                         w.d, wb.data()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(fwd(nullptr, w.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    TDesc unset;
    CHECK(fwd(unset.d, w.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnCreate(nullptr) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetStream(nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM);
  }
  SUBCASE("data types: mismatch, compute types, layouts") {
    TDesc xh(CUDNN_DATA_HALF, xs), yh(CUDNN_DATA_HALF, ys);
    FDesc wh(CUDNN_DATA_HALF, wsz);
    CHECK(fwd(xh.d, w.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    CHECK(fwd(x.d, wh.d, c.d, y.d) == CUDNN_STATUS_BAD_PARAM);
    CHECK(fwd(x.d, w.d, c.d, yh.d) == CUDNN_STATUS_BAD_PARAM);
    CDesc chalf({0, 0}, {1, 1}, {1, 1}, 2, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF);
    CHECK(fwd(x.d, w.d, chalf.d, y.d) == CUDNN_STATUS_NOT_SUPPORTED);  // FLOAT data, HALF math
    CHECK(fwd(xh.d, wh.d, chalf.d, yh.d) == CUDNN_STATUS_SUCCESS);
    TDesc xb16(CUDNN_DATA_BFLOAT16, xs), yb16(CUDNN_DATA_BFLOAT16, ys);
    FDesc wb16(CUDNN_DATA_BFLOAT16, wsz);
    CHECK(fwd(xb16.d, wb16.d, chalf.d, yb16.d) == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(fwd(xb16.d, wb16.d, c.d, yb16.d) == CUDNN_STATUS_SUCCESS);
    // the algorithm query reports the rejected combination per algorithm
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n = 0;
    REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(h.h, x.d, w.d, chalf.d, y.d, 8, &n, perf) ==
            CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < n; ++i) CHECK(perf[i].status == CUDNN_STATUS_NOT_SUPPORTED);
    size_t bytes = 0;
    CHECK(cudnnGetConvolutionForwardWorkspaceSize(h.h, x.d, w.d, chalf.d, y.d,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                  &bytes) == CUDNN_STATUS_NOT_SUPPORTED);
    FDesc nhwc;
    CHECK(cudnnSetFilterNdDescriptor(nhwc.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 4,
                                     wsz.data()) == CUDNN_STATUS_NOT_SUPPORTED);
  }
  SUBCASE("descriptor setters") {
    TDesc t;
    const Dims d = {2, 0, 3, 3}, s = packed({2, 1, 3, 3});
    CHECK(cudnnSetTensorNdDescriptor(t.d, CUDNN_DATA_FLOAT, 4, d.data(), s.data()) ==
          CUDNN_STATUS_BAD_PARAM);
    const Dims ok = {2, 1, 3, 3}, zero_stride = {9, 9, 0, 1};
    CHECK(cudnnSetTensorNdDescriptor(t.d, CUDNN_DATA_FLOAT, 4, ok.data(), zero_stride.data()) ==
          CUDNN_STATUS_BAD_PARAM);
    const Dims neg = {-1, 0};
    cudnnConvolutionDescriptor_t cd;
    REQUIRE(cudnnCreateConvolutionDescriptor(&cd) == CUDNN_STATUS_SUCCESS);
    const Dims one = {1, 1}, zero = {0, 0};
    CHECK(cudnnSetConvolutionNdDescriptor(cd, 2, neg.data(), one.data(), one.data(),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionNdDescriptor(cd, 2, zero.data(), zero.data(), one.data(),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionGroupCount(cd, 0) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionMathType(cd, static_cast<cudnnMathType_t>(17)) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroyConvolutionDescriptor(cd) == CUDNN_STATUS_SUCCESS);
  }
}

TEST_CASE("cudnn emulator: error strings") {
  CHECK(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS") == 0);
  CHECK(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM") == 0);
  CHECK(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED),
                    "CUDNN_STATUS_NOT_SUPPORTED") == 0);
  CHECK(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_INTERNAL_ERROR),
                    "CUDNN_STATUS_INTERNAL_ERROR") == 0);
  CHECK(cudnnGetErrorString(static_cast<cudnnStatus_t>(-5)) != nullptr);
}

// ---- pooling ----

namespace {

// Reference pooling over N-d windows (NCHW packed), the documented rules.
struct Pool {
  Dims x, win, pad, stride;
  cudnnPoolingMode_t mode;
  bool propagate = true;
  Dims y() const {
    Dims r = {x[0], x[1]};
    for (size_t d = 0; d + 2 < x.size(); ++d)
      r.push_back((x[d + 2] + 2 * pad[d] - win[d]) / stride[d] + 1);
    return r;
  }
};

// f(yi, in-range x indices in window order, divisor)
template <class F>
void ref_windows(const Pool& p, F&& f) {
  const Dims yd = p.y(), ys = packed(yd), xs = packed(p.x), wsd = packed(p.win);
  const int nsp = static_cast<int>(p.x.size()) - 2;
  for (int64_t yi = 0; yi < prod(yd); ++yi) {
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < prod(p.win); ++j) {
      int64_t xi = (yi / ys[0] % yd[0]) * xs[0] + (yi / ys[1] % yd[1]) * xs[1];
      bool inside = true;
      for (int d = 0; d < nsp; ++d) {
        const int i = static_cast<int>(yi / ys[2 + d] % yd[2 + d]) * p.stride[d] - p.pad[d] +
                      static_cast<int>(j / wsd[d] % p.win[d]);
        inside = inside && i >= 0 && i < p.x[2 + d];
        xi += int64_t{i} * xs[2 + d];
      }
      if (inside) idx.push_back(xi);
    }
    f(yi, idx,
      p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? prod(p.win)
                                                             : static_cast<int64_t>(idx.size()));
  }
}

void check_pool(const Pool& p, cudnnDataType_t t) {
  std::mt19937 rng(13);
  Handle h;
  PDesc pd(p.mode, p.win, p.pad, p.stride,
           p.propagate ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN);
  TDesc xd(t, p.x), yd(t, p.y());
  Buf x = random_buf(t, prod(p.x), rng), dy = random_buf(t, prod(p.y()), rng);
  Buf y(t, prod(p.y())), dx(t, prod(p.x));
  REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.p(), &kZero, yd.d, y.p()) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnPoolingBackward(h.h, pd.d, &kOne, yd.d, y.p(), yd.d, dy.p(), xd.d, x.p(), &kZero,
                               xd.d, dx.p()) == CUDNN_STATUS_SUCCESS);
  const bool is_max = p.mode == CUDNN_POOLING_MAX || p.mode == CUDNN_POOLING_MAX_DETERMINISTIC;
  std::vector<double> ry(static_cast<size_t>(prod(p.y()))), rdx(static_cast<size_t>(prod(p.x)));
  ref_windows(p, [&](int64_t yi, const std::vector<int64_t>& idx, int64_t div) {
    if (is_max) {
      int64_t best = idx[0];
      for (int64_t i : idx)
        if (x.get(i) > x.get(best)) best = i;  // strict: the first maximum wins ties
      ry[yi] = x.get(best);
      rdx[best] += dy.get(yi);
    } else {
      double s = 0;
      for (int64_t i : idx) s += x.get(i);
      ry[yi] = s / div;
      for (int64_t i : idx) rdx[i] += dy.get(yi) / div;
    }
  });
  for (size_t i = 0; i < ry.size(); ++i) CHECK(y.get(i) == round_to(t, ry[i]));
  for (size_t i = 0; i < rdx.size(); ++i) CHECK(dx.get(i) == doctest::Approx(round_to(t, rdx[i])));
}

}  // namespace

TEST_CASE("cudnn emulator: pooling hand-computed cases") {
  Handle h;
  // x = 1..9 in 3x3; window 2x2, pad 1, stride 2 -> y 2x2 with windows clipped by padding
  TDesc xd(CUDNN_DATA_FLOAT, {1, 1, 3, 3}), yd(CUDNN_DATA_FLOAT, {1, 1, 2, 2});
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float y[4];
  {
    PDesc pd(CUDNN_POOLING_MAX, {2, 2}, {1, 1}, {2, 2});
    REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x, &kZero, yd.d, y) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(y[0] == 1);  // window rows -1..0, cols -1..0: only x(0,0)
    CHECK(y[1] == 3);  // rows -1..0, cols 1..2
    CHECK(y[2] == 7);
    CHECK(y[3] == 9);
  }
  {
    PDesc pd(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, {2, 2}, {1, 1}, {2, 2});
    REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x, &kZero, yd.d, y) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(y[0] == 1.f / 4);
    CHECK(y[1] == (2.f + 3) / 4);
    CHECK(y[3] == (5.f + 6 + 8 + 9) / 4);
  }
  {
    PDesc pd(CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, {2, 2}, {1, 1}, {2, 2});
    REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x, &kZero, yd.d, y) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(y[0] == 1);
    CHECK(y[1] == 2.5f);
    CHECK(y[2] == 5.5f);
    CHECK(y[3] == 7);
    // backward: dy = 4 everywhere spreads 4 / count to each window's in-range positions
    const float dy[4] = {4, 4, 4, 4};
    float dx[9];
    REQUIRE(cudnnPoolingBackward(h.h, pd.d, &kOne, yd.d, y, yd.d, dy, xd.d, x, &kZero, xd.d,
                                 dx) == CUDNN_STATUS_SUCCESS);
    CHECK(dx[0] == 4);
    CHECK(dx[1] == 2);
    CHECK(dx[4] == 1);
    // x and y are not read in average mode (may be null)
    REQUIRE(cudnnPoolingBackward(h.h, pd.d, &kOne, yd.d, nullptr, yd.d, dy, xd.d, nullptr, &kZero,
                                 xd.d, dx) == CUDNN_STATUS_SUCCESS);
    CHECK(dx[4] == 1);
  }
  {  // max backward with ties: the first maximum in window order gets dy; beta accumulates
    const float t[9] = {5, 5, 1, 5, 5, 1, 0, 0, 0};
    TDesc y1(CUDNN_DATA_FLOAT, {1, 1, 1, 1});
    PDesc pd(CUDNN_POOLING_MAX_DETERMINISTIC, {3, 3}, {0, 0}, {1, 1});
    float yy[1], dy[1] = {2};
    REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, t, &kZero, y1.d, yy) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(yy[0] == 5);
    float dx[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const float half = 0.5f;
    REQUIRE(cudnnPoolingBackward(h.h, pd.d, &kOne, y1.d, yy, y1.d, dy, xd.d, t, &half, xd.d,
                                 dx) == CUDNN_STATUS_SUCCESS);
    CHECK(dx[0] == 2.5f);
    for (int i = 1; i < 9; ++i) CHECK(dx[i] == 0.5f);
  }
  {  // NaN: propagated or skipped per the descriptor
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float t[9] = {1, nan, 3, 4, 5, 6, 7, 8, 2};
    TDesc y1(CUDNN_DATA_FLOAT, {1, 1, 1, 1});
    float yy[1];
    PDesc prop(CUDNN_POOLING_MAX, {3, 3}, {0, 0}, {1, 1}, CUDNN_PROPAGATE_NAN);
    REQUIRE(cudnnPoolingForward(h.h, prop.d, &kOne, xd.d, t, &kZero, y1.d, yy) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(std::isnan(yy[0]));
    PDesc skip(CUDNN_POOLING_MAX, {3, 3}, {0, 0}, {1, 1}, CUDNN_NOT_PROPAGATE_NAN);
    REQUIRE(cudnnPoolingForward(h.h, skip.d, &kOne, xd.d, t, &kZero, y1.d, yy) ==
            CUDNN_STATUS_SUCCESS);
    CHECK(yy[0] == 8);
  }
}

TEST_CASE("cudnn emulator: pooling 1-D, 2-D, 3-D against loops") {
  for (cudnnPoolingMode_t m :
       {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING}) {
    CAPTURE(static_cast<int>(m));
    check_pool(Pool{{2, 3, 9}, {3}, {1}, {2}, m}, CUDNN_DATA_FLOAT);
    check_pool(Pool{{2, 3, 7, 6}, {3, 2}, {1, 1}, {2, 1}, m}, CUDNN_DATA_FLOAT);
    check_pool(Pool{{2, 3, 7, 6}, {3, 2}, {1, 1}, {2, 1}, m}, CUDNN_DATA_HALF);
    check_pool(Pool{{1, 2, 4, 5, 3}, {2, 3, 2}, {1, 1, 0}, {2, 2, 1}, m}, CUDNN_DATA_BFLOAT16);
  }
}

TEST_CASE("cudnn emulator: pooling parameter checks") {
  Handle h;
  TDesc xd(CUDNN_DATA_FLOAT, {1, 2, 5, 5}), yd(CUDNN_DATA_FLOAT, {1, 2, 2, 2});
  PDesc pd(CUDNN_POOLING_MAX, {2, 2}, {0, 0}, {2, 2});
  std::vector<float> x(50), y(8), dx(50);
  REQUIRE(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.data(), &kZero, yd.d, y.data()) ==
          CUDNN_STATUS_SUCCESS);
  TDesc ybad(CUDNN_DATA_FLOAT, {1, 2, 3, 2}), ychan(CUDNN_DATA_FLOAT, {1, 3, 2, 2});
  TDesc yhalf(CUDNN_DATA_HALF, {1, 2, 2, 2}), y5(CUDNN_DATA_FLOAT, {1, 2, 2, 2, 1});
  CHECK(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.data(), &kZero, ybad.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.data(), &kZero, ychan.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.data(), &kZero, yhalf.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, x.data(), &kZero, y5.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingForward(h.h, pd.d, &kOne, xd.d, nullptr, &kZero, yd.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingForward(h.h, nullptr, &kOne, xd.d, x.data(), &kZero, yd.d, y.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  // max backward needs x and y; dx must be x's shape
  CHECK(cudnnPoolingBackward(h.h, pd.d, &kOne, yd.d, y.data(), yd.d, y.data(), xd.d, nullptr,
                             &kZero, xd.d, dx.data()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnPoolingBackward(h.h, pd.d, &kOne, yd.d, y.data(), yd.d, y.data(), xd.d, x.data(),
                             &kZero, ybad.d, dx.data()) == CUDNN_STATUS_BAD_PARAM);
  cudnnPoolingDescriptor_t p;
  REQUIRE(cudnnCreatePoolingDescriptor(&p) == CUDNN_STATUS_SUCCESS);
  const Dims w0 = {0, 2}, one = {1, 1}, zero = {0, 0};
  CHECK(cudnnSetPoolingNdDescriptor(p, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, w0.data(),
                                    zero.data(), one.data()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnSetPoolingNdDescriptor(p, static_cast<cudnnPoolingMode_t>(9), CUDNN_PROPAGATE_NAN, 2,
                                    one.data(), zero.data(), one.data()) ==
        CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnDestroyPoolingDescriptor(p) == CUDNN_STATUS_SUCCESS);
}

// ---- AddTensor, BackwardBias ----

TEST_CASE("cudnn emulator: AddTensor broadcasts A where its dim is 1") {
  Handle h;
  TDesc ad(CUDNN_DATA_FLOAT, {1, 3, 1, 1}), cd(CUDNN_DATA_FLOAT, {2, 3, 2, 2});
  const float a[3] = {1, 2, 3};
  std::vector<float> c(24);
  for (int i = 0; i < 24; ++i) c[i] = static_cast<float>(i);
  const float alpha = 2, beta = 1;
  REQUIRE(cudnnAddTensor(h.h, &alpha, ad.d, a, &beta, cd.d, c.data()) == CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < 24; ++i) CHECK(c[i] == static_cast<float>(i) + 2 * a[(i / 4) % 3]);
  std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());  // beta 0: not read
  REQUIRE(cudnnAddTensor(h.h, &kOne, ad.d, a, &kZero, cd.d, c.data()) == CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < 24; ++i) CHECK(c[i] == a[(i / 4) % 3]);
  TDesc full(CUDNN_DATA_FLOAT, {2, 3, 2, 2});
  std::vector<float> a2(24, 0.5f);
  REQUIRE(cudnnAddTensor(h.h, &kOne, full.d, a2.data(), &kOne, cd.d, c.data()) ==
          CUDNN_STATUS_SUCCESS);
  CHECK(c[5] == 2.5f);
  TDesc bad(CUDNN_DATA_FLOAT, {1, 2, 1, 1}), badh(CUDNN_DATA_HALF, {1, 3, 1, 1});
  CHECK(cudnnAddTensor(h.h, &kOne, bad.d, a, &kOne, cd.d, c.data()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnAddTensor(h.h, &kOne, badh.d, a, &kOne, cd.d, c.data()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnAddTensor(h.h, &kOne, ad.d, nullptr, &kOne, cd.d, c.data()) ==
        CUDNN_STATUS_BAD_PARAM);
}

TEST_CASE("cudnn emulator: ConvolutionBackwardBias sums dY over n and space") {
  Handle h;
  TDesc dyd(CUDNN_DATA_HALF, {2, 3, 2, 2}), dbd(CUDNN_DATA_HALF, {1, 3, 1, 1});
  Buf dy(CUDNN_DATA_HALF, 24), db(CUDNN_DATA_HALF, 3);
  for (int i = 0; i < 24; ++i) dy.set(i, i % 5 - 1.5);
  db.fill(std::numeric_limits<double>::quiet_NaN());
  REQUIRE(cudnnConvolutionBackwardBias(h.h, &kOne, dyd.d, dy.p(), &kZero, dbd.d, db.p()) ==
          CUDNN_STATUS_SUCCESS);
  for (int k = 0; k < 3; ++k) {
    double s = 0;
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 4; ++j) s += dy.get((n * 3 + k) * 4 + j);
    CHECK(db.get(k) == s);
  }
  const float beta = 1;
  const std::vector<double> before = db.values();
  REQUIRE(cudnnConvolutionBackwardBias(h.h, &kOne, dyd.d, dy.p(), &beta, dbd.d, db.p()) ==
          CUDNN_STATUS_SUCCESS);
  for (int k = 0; k < 3; ++k) CHECK(db.get(k) == 2 * before[k]);
  TDesc bad(CUDNN_DATA_HALF, {2, 3, 1, 1});
  CHECK(cudnnConvolutionBackwardBias(h.h, &kOne, dyd.d, dy.p(), &kZero, bad.d, db.p()) ==
        CUDNN_STATUS_BAD_PARAM);
}

#endif  // OAT_CUDA_EMULATED
