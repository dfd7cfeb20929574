// Random generators (runtime/cpu/kernels/random.cc): shapes, dtypes, ranges, moments, seeding
// (reproducible per seed, fresh numbers each run of one executor), errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/kernels/philox.h"
#include "runtime/cpu/kernels/random_philox.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

std::string error_of(const std::string& op, int64_t opset, std::map<std::string, Attribute> attrs,
                     const std::vector<Tensor>& in) {
  try {
    run1(op, opset, attrs, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double mean_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}
double var_of(const std::vector<float>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

// One node graph run twice by one Executor (one kernel, one generator).
std::pair<Tensor, Tensor> run_twice(const std::string& op, std::map<std::string, Attribute> attrs,
                                    const Tensor& x, const std::string& name = "r") {
  Graph g;
  g.opsets[""] = 15;
  Node n;
  n.name = name;
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = 15;
  n.attrs = std::move(attrs);
  n.inputs = {"x"};
  n.outputs = {"y"};
  std::vector<Dim> dims;
  for (int64_t d : x.shape()) dims.push_back(Dim{d, ""});
  g.inputs.push_back(ValueInfo{"x", x.dtype(), dims});
  g.outputs.push_back(ValueInfo{"y", DType::Undefined, std::nullopt});
  g.nodes.push_back(n);
  Executor ex(g);
  Tensor a = ex.run({{"x", x}}).at(0);
  Tensor b = ex.run({{"x", x}}).at(0);
  return {a, b};
}

}  // namespace

TEST_CASE("RandomUniform: shape, dtype, values in [low, high), mean and variance") {
  Tensor y = run1("RandomUniform", 1,
                  {{"shape", attr_ints({100, 200})}, {"low", attr_f(-2)}, {"high", attr_f(3)},
                   {"seed", attr_f(7)}},
                  {});
  CHECK(y.dtype() == DType::F32);
  CHECK(y.shape() == Shape{100, 200});
  auto v = fvec(y);
  for (float x : v) REQUIRE((x >= -2 && x < 3));
  CHECK(mean_of(v) == doctest::Approx(0.5).epsilon(0.02));
  CHECK(var_of(v) == doctest::Approx(25.0 / 12).epsilon(0.03));  // (high - low)^2 / 12
}

TEST_CASE("RandomNormal: mean and scale; F64, F16 and BF16 outputs") {
  for (int64_t code : {1, 11, 10, 16}) {
    CAPTURE(code);
    Tensor y = run1("RandomNormal", 1,
                    {{"shape", attr_ints({20000})}, {"mean", attr_f(1.5f)},
                     {"scale", attr_f(0.5f)}, {"seed", attr_f(3)}, {"dtype", attr_i(code)}},
                    {});
    const DType want = code == 1 ? DType::F32 : code == 11 ? DType::F64
                       : code == 10 ? DType::F16 : DType::BF16;
    CHECK(y.dtype() == want);
    auto v = fvec(y);
    CHECK(mean_of(v) == doctest::Approx(1.5).epsilon(0.01));
    CHECK(std::sqrt(var_of(v)) == doctest::Approx(0.5).epsilon(0.03));
  }
}

TEST_CASE("uniform in F16/BF16 stays below high after rounding") {
  // high = 1.0001 is not representable in F16/BF16: values rounding up to 1.0 or beyond would
  // leave [low, high); they become the largest value below high (1.0 here, < 1.0001).
  for (int64_t code : {10, 16}) {
    Tensor y = run1("RandomUniform", 1,
                    {{"shape", attr_ints({5000})}, {"low", attr_f(0.99f)},
                     {"high", attr_f(1.0001f)}, {"seed", attr_f(1)}, {"dtype", attr_i(code)}},
                    {});
    for (float x : fvec(y)) REQUIRE((x >= 0.98f && x < 1.0001f));
  }
}

TEST_CASE("RandomNormalLike / RandomUniformLike take the input's shape and dtype") {
  Tensor x = Tensor(DType::F64, {3, 4});
  Tensor y = run1("RandomNormalLike", 1, {}, {x});
  CHECK(y.dtype() == DType::F64);
  CHECK(y.shape() == Shape{3, 4});
  Tensor xi = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor u = run1("RandomUniformLike", 1, {{"dtype", attr_i(10)}}, {xi});
  CHECK(u.dtype() == DType::F16);
  CHECK(u.shape() == Shape{2, 2});
  for (float v : fvec(u)) CHECK((v >= 0 && v < 1));
  CHECK(error_of("RandomUniformLike", 1, {}, {xi}).find("not a float type") != std::string::npos);
}

TEST_CASE("a seed reproduces the stream; each run of one executor draws new numbers") {
  Tensor x(DType::F32, {64});
  auto [a1, a2] = run_twice("RandomNormalLike", {{"seed", attr_f(42)}}, x);
  auto [b1, b2] = run_twice("RandomNormalLike", {{"seed", attr_f(42)}}, x);
  CHECK(fvec(a1) == fvec(b1));  // same seed, new executor: same first draw
  CHECK(fvec(a2) == fvec(b2));  // and same second draw
  CHECK(fvec(a1) != fvec(a2));  // the generator advances between runs
  auto [c1, c2] = run_twice("RandomNormalLike", {{"seed", attr_f(43)}}, x);
  CHECK(fvec(c1) != fvec(a1));
  // Unseeded nodes draw Philox keyed by the process seed and the node: the same node draws the
  // same sequence in every executor of the process, another node another one.
  auto [d1, d2] = run_twice("RandomNormalLike", {}, x);
  auto [e1, e2] = run_twice("RandomNormalLike", {}, x);
  auto [f1, f2] = run_twice("RandomNormalLike", {}, x, "other");
  CHECK(fvec(d1) == fvec(e1));
  CHECK(fvec(d2) == fvec(e2));
  CHECK(fvec(d1) != fvec(d2));
  CHECK(fvec(d1) != fvec(f1));
  // So do unseeded Bernoulli (mt19937_64 keyed the same way): `check` compares such a node's
  // draws between its two paths and its own reference run.
  Tensor p(DType::F32, {256});
  for (int64_t i = 0; i < p.numel(); ++i) p.data<float>()[i] = 0.5f;
  auto [g1, g2] = run_twice("Bernoulli", {}, p);
  auto [h1, h2] = run_twice("Bernoulli", {}, p);
  auto [k1, k2] = run_twice("Bernoulli", {}, p, "other");
  CHECK(fvec(g1) == fvec(h1));
  CHECK(fvec(g2) == fvec(h2));
  CHECK(fvec(g1) != fvec(g2));
  CHECK(fvec(g1) != fvec(k1));
}

TEST_CASE("unseeded RandomUniform / RandomNormal: the Philox formulas, moments, the range") {
  // Element i of draw d: uniform low + (high - low)·word_i·2^-32; normal mean + scale·z_i with
  // z_i the Box-Muller value of words of block i / 4 (runtime/cpu/kernels/philox.h).
  Tensor x(DType::F32, {20001});
  Node n;
  n.name = "r";
  n.outputs = {"y"};
  const uint64_t key = cpu::random_philox_key(n);
  auto [u0, u1] = run_twice("RandomUniformLike", {{"low", attr_f(-2)}, {"high", attr_f(3)}}, x);
  auto [z0, z1] = run_twice("RandomNormalLike", {{"mean", attr_f(1)}, {"scale", attr_f(2)}}, x);
  int64_t wrong = 0;
  for (uint64_t draw = 0; draw < 2; ++draw) {
    const std::vector<float> u = fvec(draw ? u1 : u0), z = fvec(draw ? z1 : z0);
    for (uint64_t i = 0; i < 20001; ++i) {
      const float ue = -2.f + 5.f * static_cast<float>(philox_uniform01(key, draw, i));
      const float ze = 1.f + 2.f * static_cast<float>(philox_normal(key, draw, i));
      wrong += u[i] != ue || z[i] != ze;
    }
    CHECK(mean_of(u) == doctest::Approx(0.5).epsilon(0.05));
    CHECK(var_of(u) == doctest::Approx(25.0 / 12).epsilon(0.05));
    CHECK(mean_of(z) == doctest::Approx(1.0).epsilon(0.05));
    CHECK(var_of(z) == doctest::Approx(4.0).epsilon(0.05));
  }
  CHECK(wrong == 0);
  // Box-Muller by hand for element 0 of draw 0: words 0 and 1 of block 0.
  const Philox4 w = philox4x32_10(Philox4{{0, 0, 0, 0}}, static_cast<uint32_t>(key),
                                  static_cast<uint32_t>(key >> 32));
  const double r = std::sqrt(-2.0 * std::log((w.v[0] + 1.0) / 4294967296.0));
  CHECK(philox_normal(key, 0, 0) == r * std::cos(6.283185307179586 * w.v[1] / 4294967296.0));
  CHECK(philox_normal(key, 0, 1) == r * std::sin(6.283185307179586 * w.v[1] / 4294967296.0));
  // A narrow F16/BF16 range: every value below high (rounding up to high is put below it).
  for (int64_t code : {10, 16}) {
    Tensor h = run1("RandomUniform", 1,
                    {{"shape", attr_ints({5000})}, {"low", attr_f(0.99f)},
                     {"high", attr_f(1.0001f)}, {"dtype", attr_i(code)}},
                    {});
    for (float v : fvec(h)) REQUIRE((v >= 0.98f && v < 1.0001f));
  }
  CHECK(cpu::random_uniform_top(DType::F16, 1.0001) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("Bernoulli: outputs in {0, 1}, p = 0 and p = 1 exact, frequency near p") {
  std::vector<float> p(3000);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i < 1000 ? 0.f : i < 2000 ? 1.f : 0.3f;
  Tensor y = run1("Bernoulli", 15, {{"seed", attr_f(5)}},
                  {Tensor::from_vector<float>({3000}, p)});
  CHECK(y.dtype() == DType::F32);
  auto v = fvec(y);
  double ones = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    REQUIRE((v[i] == 0 || v[i] == 1));
    if (i < 1000) CHECK(v[i] == 0);
    else if (i < 2000) CHECK(v[i] == 1);
    else ones += v[i];
  }
  CHECK(ones / 1000 == doctest::Approx(0.3).epsilon(0.2));
  // dtype: bool, int64, and F16 input
  Tensor pb = run1("Bernoulli", 15, {{"dtype", attr_i(9)}},
                   {cast_tensor(Tensor::from_vector<float>({4}, {0, 1, 0, 1}), DType::F16)});
  CHECK(pb.dtype() == DType::Bool);
  CHECK(ivec(pb) == std::vector<int64_t>{0, 1, 0, 1});
  Tensor pi = run1("Bernoulli", 15, {{"dtype", attr_i(7)}},
                   {Tensor::from_vector<double>({2}, {1, 0})});
  CHECK(pi.dtype() == DType::I64);
  CHECK(ivec(pi) == std::vector<int64_t>{1, 0});
  CHECK(error_of("Bernoulli", 15, {}, {Tensor::from_vector<float>({2}, {0.5f, 1.5f})})
            .find("outside [0, 1]") != std::string::npos);
}

TEST_CASE("Multinomial: indices in range, frequencies follow softmax(x), int32 and int64") {
  // Row 0: log-probabilities of (0.2, 0.8, 0); row 1: only class 2.
  const float ninf = -std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({2, 3}, {std::log(0.2f), std::log(0.8f), ninf,
                                                 ninf, ninf, 0.f});
  Tensor y = run1("Multinomial", 7, {{"sample_size", attr_i(4000)}, {"seed", attr_f(9)}}, {x});
  CHECK(y.dtype() == DType::I32);
  CHECK(y.shape() == Shape{2, 4000});
  auto v = ivec(y);
  double ones = 0;
  for (int64_t k = 0; k < 4000; ++k) {
    REQUIRE((v[k] == 0 || v[k] == 1));
    ones += v[k] == 1;
    REQUIRE(v[4000 + k] == 2);
  }
  CHECK(ones / 4000 == doctest::Approx(0.8).epsilon(0.05));
  Tensor y64 = run1("Multinomial", 7, {{"dtype", attr_i(7)}}, {x});
  CHECK(y64.dtype() == DType::I64);
  CHECK(y64.shape() == Shape{2, 1});
  CHECK(error_of("Multinomial", 7, {}, {Tensor(DType::F32, {3})}).find("batch_size") !=
        std::string::npos);
  CHECK(error_of("Multinomial", 7, {{"dtype", attr_i(1)}}, {x}).find("int32 (6) or int64 (7)") !=
        std::string::npos);
}

TEST_CASE("RandomUniform errors name the node") {
  const std::string e = error_of("RandomUniform", 1,
                                 {{"shape", attr_ints({2})}, {"low", attr_f(2)}, {"high", attr_f(1)}},
                                 {});
  CHECK(e.find("'n0'") != std::string::npos);
  CHECK(e.find("not below high") != std::string::npos);
  CHECK(error_of("RandomNormal", 1, {}, {}).find("missing attribute 'shape'") != std::string::npos);
}
