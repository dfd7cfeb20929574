// Host-side rules of the CUDA ConvTranspose and MaxPool-with-Indices kernels, checked against the
// CPU kernels without a device:
//   - max_pool_window / max_pool_index (pool_impl.h), the code the device kernel runs per output,
//     evaluated on the host over the CPU's windows: Y and Indices equal the CPU MaxPool's exactly
//     (first maximum on ties, NaN, dilation, asymmetric pads, ceil mode, storage_order, 1-3 D).
//   - transposed_conv_window (conv_transpose.h): where it accepts a window, cuDNN's
//     backward-data pass with those symmetric pads (modelled by its definition) equals the CPU
//     ConvTranspose; the windows it refuses are exactly those cuDNN would count differently.
// Built with the CUDA backend only (these functions live in it); elsewhere the file says so.
#include <doctest/doctest.h>

#ifdef OAT_HAVE_CUDA
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"
#include "runtime/cuda/kernels/conv_transpose.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/pool_window.h"
#include "tests/runtime/single_node.h"

using namespace oat;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_s;

namespace {

Node node_with(const std::string& op, int64_t opset, const std::map<std::string, Attribute>& a) {
  Node n;
  n.name = "n0";
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = opset;
  n.attrs = a;
  n.outputs = {"y"};
  return n;
}

// Deterministic values from a small set (ties inside windows are common), with a NaN and -inf.
Tensor pool_input(const Shape& s, uint64_t seed) {
  Tensor t(DType::F32, s);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((seed >> 33) % 7) - 3.f;
  }
  if (t.numel() > 5) p[5] = std::numeric_limits<float>::quiet_NaN();
  if (t.numel() > 11) p[11] = -std::numeric_limits<float>::infinity();
  if (t.numel() > 17) p[t.numel() - 3] = std::numeric_limits<float>::quiet_NaN();
  return t;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("MaxPool with Indices: the CUDA window rule equals the CPU kernel") {
  struct PoolCase {
    Shape x;
    std::map<std::string, Attribute> attrs;
  };
  const std::vector<PoolCase> cases = {
      {{2, 3, 7, 7},
       {{"kernel_shape", attr_ints({3, 3})},
        {"strides", attr_ints({2, 2})},
        {"pads", attr_ints({1, 1, 1, 1})}}},
      {{1, 2, 7, 6},
       {{"kernel_shape", attr_ints({2, 3})},
        {"dilations", attr_ints({2, 1})},
        {"strides", attr_ints({2, 2})},
        {"pads", attr_ints({0, 1, 1, 0})},
        {"ceil_mode", attr_i(1)},
        {"storage_order", attr_i(1)}}},
      {{2, 2, 9}, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}}},
      {{1, 2, 4, 5, 3},
       {{"kernel_shape", attr_ints({2, 2, 2})},
        {"pads", attr_ints({1, 0, 1, 0, 1, 1})},
        {"storage_order", attr_i(1)}}},
      {{1, 1, 5, 5},
       {{"kernel_shape", attr_ints({2, 2})},
        {"auto_pad", attr_s("SAME_UPPER")},
        {"strides", attr_ints({2, 2})}}},
      // Pads wider than the kernel: windows with no tap inside give lowest and -1.
      {{1, 1, 3, 3}, {{"kernel_shape", attr_ints({1, 1})}, {"pads", attr_ints({1, 1, 1, 1})}}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PoolCase& c = cases[ci];
    CAPTURE(ci);
    const Tensor x = pool_input(c.x, 77 + ci);
    const auto ref = oat_test::run_node("MaxPool", 12, c.attrs, {x}, 2);
    const Node n = node_with("MaxPool", 12, c.attrs);
    std::vector<Tensor> outs;
    const KernelContext ctx(n, {&x}, &outs, Device::CPU);
    const cpu::WindowAttrs a = cpu::parse_window_attrs(n);
    const cuda::PoolGeometry g =
        cuda::pool_geometry(cpu::forward_window(ctx, a, x.shape(), a.kernel_shape));
    const bool column_major = n.attr_int("storage_order", 0) != 0;
    const int64_t planes = c.x[0] * c.x[1], plane = x.numel() / planes;
    const int64_t P = g.out[0] * g.out[1] * g.out[2];
    REQUIRE(ref[0].numel() == planes * P);
    const float* y = ref[0].data<float>();
    const int64_t* idx = ref[1].data<int64_t>();
    int64_t mismatches = 0, none = 0;
    for (int64_t p = 0; p < planes; ++p) {
      const float* xp = x.data<float>() + p * plane;
      for (int64_t o = 0; o < P; ++o) {
        float best = 0;
        const int64_t at = cuda::max_pool_window(g, o, [&](int64_t i) { return xp[i]; }, &best);
        none += at < 0;
        const int64_t want = idx[p * P + o];
        if (!same_float(best, y[p * P + o]) ||
            cuda::max_pool_index(g, p, at, column_major) != want)
          ++mismatches;
      }
    }
    CHECK(mismatches == 0);
    if (ci + 1 == cases.size()) CHECK(none > 0);
  }
}

TEST_CASE("ConvTranspose on cuDNN: accepted windows are the CPU's, refused ones are not") {
  // 1-D, one channel, F64: Y from the CPU kernel against the cuDNN backward-data definition with
  // symmetric begin padding p over Y's length:
  //   Y[i] = Σ_{o < in, j < k, o·s − p + j·d = i} x[o]·w[j].
  int accepted = 0, refused = 0, compared = 0;
  for (const char* auto_pad : {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
    for (int64_t in = 1; in <= 4; ++in)
      for (int64_t k = 1; k <= 3; ++k)
        for (int64_t st = 1; st <= 3; ++st)
          for (int64_t dil = 1; dil <= 2; ++dil)
            for (int64_t op = 0; op < st; ++op)
              for (int64_t pb = 0; pb <= 2; ++pb)
                for (int64_t pe = 0; pe <= 2; ++pe)
                  for (int64_t extra = -1; extra <= 2; ++extra) {  // -1: no output_shape
                    const bool notset = std::string(auto_pad) == "NOTSET";
                    if (!notset && (pb || pe)) continue;
                    std::map<std::string, Attribute> attrs = {
                        {"strides", attr_ints({st})},
                        {"dilations", attr_ints({dil})},
                        {"output_padding", attr_ints({op})},
                        {"auto_pad", attr_s(auto_pad)}};
                    if (notset) attrs["pads"] = attr_ints({pb, pe});
                    const int64_t natural = st * (in - 1) + op + (k - 1) * dil + 1;
                    if (extra >= 0) attrs["output_shape"] = attr_ints({natural - 1 + extra});
                    CAPTURE(auto_pad);
                    CAPTURE(in);
                    CAPTURE(k);
                    CAPTURE(st);
                    CAPTURE(dil);
                    CAPTURE(op);
                    CAPTURE(pb);
                    CAPTURE(pe);
                    CAPTURE(extra);
                    Tensor x(DType::F64, {1, 1, in}), w(DType::F64, {1, 1, k});
                    for (int64_t i = 0; i < in; ++i) x.data<double>()[i] = 1.0 + i * 0.37;
                    for (int64_t j = 0; j < k; ++j) w.data<double>()[j] = 0.5 - j * 1.3;
                    const Node n = node_with("ConvTranspose", 11, attrs);
                    std::vector<Tensor> outs;
                    const KernelContext ctx(n, {&x, &w}, &outs, Device::CPU);
                    const cpu::WindowAttrs a = cpu::parse_window_attrs(n);
                    cpu::Window3 win;
                    try {
                      win = cpu::conv_transpose_window(ctx, a, n.attr_ints("output_padding"),
                                                       n.attr_ints("output_shape"), x.shape(), {k});
                    } catch (const Error&) {
                      continue;  // the CPU refuses it too (an empty output)
                    }
                    const int64_t out = win.in[2], p = win.pad[2], dk = (k - 1) * dil + 1;
                    const int64_t span = out + 2 * p - dk;
                    const bool same_count = p >= 0 && span >= 0 && span / st + 1 == in;
                    cuda::CudnnConvWindow cw;
                    try {
                      cw = cuda::transposed_conv_window(ctx, win, n.attr_ints("output_padding"),
                                                        x.shape(), w.shape());
                    } catch (const Unsupported& e) {
                      ++refused;
                      CHECK_FALSE(same_count);
                      CHECK(std::string(e.what()).find("cuDNN pads both ends alike") !=
                            std::string::npos);
                      continue;
                    }
                    ++accepted;
                    CHECK(same_count);
                    REQUIRE(cw.pad.size() == 2);  // cuDNN's 2-D view of 1-D data
                    CHECK(cw.pad[0] == 0);
                    CHECK(cw.stride[0] == 1);
                    CHECK(cw.dil[0] == 1);
                    CHECK(cw.pad[1] == p);
                    CHECK(cw.stride[1] == st);
                    CHECK(cw.dil[1] == dil);
                    const Tensor y = oat_test::run_node("ConvTranspose", 11, attrs, {x, w})[0];
                    REQUIRE(y.numel() == out);
                    std::vector<double> model(static_cast<size_t>(out), 0.0);
                    for (int64_t o = 0; o < in; ++o)
                      for (int64_t j = 0; j < k; ++j) {
                        const int64_t i = o * cw.stride[1] - cw.pad[1] + j * cw.dil[1];
                        if (i >= 0 && i < out)
                          model[static_cast<size_t>(i)] +=
                              x.data<double>()[o] * w.data<double>()[j];
                      }
                    for (int64_t i = 0; i < out; ++i)
                      CHECK(model[static_cast<size_t>(i)] ==
                            doctest::Approx(y.data<double>()[i]).epsilon(1e-12));
                    ++compared;
                  }
  CHECK(accepted > 100);
  CHECK(refused > 20);
  CHECK(compared == accepted);
  MESSAGE("ConvTranspose windows: " << accepted << " accepted, " << refused << " refused");
}

TEST_CASE("ConvTranspose on cuDNN: 2-D pads in axis order, SAME_UPPER with an odd total refused") {
  Tensor x(DType::F32, {1, 2, 3, 4}), w(DType::F32, {2, 1, 3, 3});
  auto window = [&](const std::map<std::string, Attribute>& attrs) {
    const Node n = node_with("ConvTranspose", 11, attrs);
    std::vector<Tensor> outs;
    const KernelContext ctx(n, {&x, &w}, &outs, Device::CPU);
    const cpu::Window3 win =
        cpu::conv_transpose_window(ctx, cpu::parse_window_attrs(n), n.attr_ints("output_padding"),
                                   n.attr_ints("output_shape"), x.shape(), {3, 3});
    return cuda::transposed_conv_window(ctx, win, n.attr_ints("output_padding"), x.shape(),
                                        w.shape());
  };
  const cuda::CudnnConvWindow cw =
      window({{"pads", attr_ints({2, 0, 2, 0})}, {"strides", attr_ints({1, 2})},
              {"dilations", attr_ints({1, 2})}, {"output_padding", attr_ints({0, 1})}});
  CHECK(cw.pad == std::vector<int>{2, 0});
  CHECK(cw.stride == std::vector<int>{1, 2});
  CHECK(cw.dil == std::vector<int>{1, 2});
  // stride 2, kernel 3: total = 1, SAME_UPPER puts it at the end (cuDNN cannot), SAME_LOWER at
  // the beginning (it can).
  CHECK_THROWS_AS(window({{"auto_pad", attr_s("SAME_UPPER")}, {"strides", attr_ints({2, 2})}}),
                  Unsupported);
  CHECK(window({{"auto_pad", attr_s("SAME_LOWER")}, {"strides", attr_ints({2, 2})}}).pad ==
        std::vector<int>{1, 1});
  // Asymmetric explicit pads with the larger one at the end.
  CHECK_THROWS_WITH_AS(window({{"pads", attr_ints({0, 0, 1, 1})}}),
                       doctest::Contains("padding 0 before and 1 after along spatial axis 0"),
                       Unsupported);
}
TEST_CASE("cuDNN descriptor dims: 1-D padded, packed strides, int overflow refused") {
  using oat::cuda::cudnn_dims;
  using oat::cuda::cudnn_packed_strides;
  CHECK(cudnn_dims({2, 3, 7}) == std::vector<int>{2, 3, 1, 7});
  CHECK(cudnn_dims({2, 3, 4, 5, 6}) == std::vector<int>{2, 3, 4, 5, 6});
  CHECK(cudnn_packed_strides({2, 3, 4, 5}) == std::vector<int>{60, 20, 5, 1});
  // More than INT_MAX elements would wrap the int strides cuDNN's legacy descriptors take.
  CHECK_THROWS_WITH_AS(cudnn_dims({64, 64, 1024, 1024}),
                       doctest::Contains("int dims and strides"), Error);
  CHECK_NOTHROW(cudnn_dims({1, 1, 32768, 65535}));
  CHECK_THROWS_AS(cudnn_packed_strides({2, 65536, 65536}), Error);
}

TEST_CASE("cuDNN algorithm choice: succeeded, F32 without TF32, workspace cap, else first allowed") {
  using oat::cuda::ConvAlgoCandidate;
  using oat::cuda::kConvWorkspaceCap;
  using oat::cuda::pick_conv_algo;
  const size_t big = kConvWorkspaceCap + 1, small = size_t{10} << 20;
  const std::vector<ConvAlgoCandidate> ranked = {
      {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_TENSOR_OP_MATH, 0},
      {CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, 0},  // TF32 for F32 inputs
      {CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, big},
      {CUDNN_STATUS_SUCCESS, CUDNN_DEFAULT_MATH, small}};
  CHECK(pick_conv_algo(ranked, DType::F32) == 3);  // not TF32, within the cap
  CHECK(pick_conv_algo(ranked, DType::F16) == 1);  // the best ranked that succeeded
  CHECK(pick_conv_algo(ranked, DType::BF16) == 1);
  // Over the cap everywhere: the first allowed one still runs.
  CHECK(pick_conv_algo({{CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, big},
                        {CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, big + 1}},
                       DType::F32) == 0);
  // Nothing usable: -1 (the kernel then fails naming the direction).
  CHECK(pick_conv_algo({{CUDNN_STATUS_NOT_SUPPORTED, CUDNN_FMA_MATH, 0}}, DType::F16) == -1);
  CHECK(pick_conv_algo({{CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH, 0}}, DType::F32) == -1);
  CHECK(pick_conv_algo({}, DType::F32) == -1);
  CHECK(oat::cuda::ranking_math(DType::F32) == CUDNN_FMA_MATH);
  CHECK(oat::cuda::ranking_math(DType::F16) == CUDNN_TENSOR_OP_MATH);
  // The pick above for F32 (index 3) was ranked with CUDNN_DEFAULT_MATH, which permits TF32 on
  // sm_80+ for FP32 data: F32 runs with FMA math whatever its candidate reports.
  using oat::cuda::run_math;
  CHECK(run_math(DType::F32, ranked[3].math) == CUDNN_FMA_MATH);
  CHECK(run_math(DType::F32, CUDNN_FMA_MATH) == CUDNN_FMA_MATH);
  CHECK(run_math(DType::F16, CUDNN_TENSOR_OP_MATH) == CUDNN_TENSOR_OP_MATH);
  CHECK(run_math(DType::BF16, CUDNN_DEFAULT_MATH) == CUDNN_DEFAULT_MATH);
}

#else
TEST_CASE("CUDA ConvTranspose and MaxPool host rules") {
  MESSAGE("SKIPPED: this build has no CUDA backend");
}
#endif
