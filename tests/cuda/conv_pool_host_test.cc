// Host-side rules of the CUDA MaxPool-with-Indices kernel, checked against the CPU kernel without
// a device: max_pool_window / max_pool_index (pool_impl.h), the code the device kernel runs per
// output, evaluated on the host over the CPU's windows: Y and Indices equal the CPU MaxPool's
// exactly (first maximum on ties, NaN, dilation, asymmetric pads, ceil mode, storage_order,
// 1-3 D). Built with the CUDA backend only (these functions live in it); elsewhere the file says so.
#include <doctest/doctest.h>

#ifdef OAT_HAVE_CUDA
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/conv_geometry.h"
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
#else
TEST_CASE("CUDA MaxPool host rules") {
  MESSAGE("SKIPPED: this build has no CUDA backend");
}
#endif
