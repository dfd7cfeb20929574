// Gradients of MatMul and Gemm: double-precision finite-difference checks over every numpy
// MatMul case (1-D operands, batches, broadcast batch dims) and every Gemm transpose/alpha/beta/C
// form, Det's cofactors, and the MatMulGrad kernel in float on shapes big enough for its threaded
// paths, against direct loops.
#include <random>

#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::in;

namespace {


GradCheckCase matmul(Shape a, Shape b) {
  GradCheckCase c;
  c.op = "MatMul";
  c.inputs = {in(std::move(a)), in(std::move(b))};
  return c;
}

GradCheckCase gemm(Shape a, Shape b, bool ta, bool tb, float alpha, float beta, Shape cshape,
                   bool has_c = true) {
  GradCheckCase c;
  c.op = "Gemm";
  c.opset = 13;
  c.attrs["transA"] = train::GradientContext::attr_int(ta);
  c.attrs["transB"] = train::GradientContext::attr_int(tb);
  c.attrs["alpha"] = train::GradientContext::attr_float(alpha);
  c.attrs["beta"] = train::GradientContext::attr_float(beta);
  c.inputs = {in(std::move(a)), in(std::move(b))};
  if (has_c) c.inputs.push_back(in(std::move(cshape)));
  return c;
}

Tensor random_f32(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Runs MatMulGrad(dY, A, B) -> (dA, dB) as a node of the internal domain.
std::pair<Tensor, Tensor> run_matmul_grad(const Tensor& dy, const Tensor& a, const Tensor& b) {
  Graph g;
  g.opsets[""] = 17;
  Node n;
  n.name = "mmg";
  n.op_type = "MatMulGrad";
  n.domain = kInternalDomain;
  n.op = OpId::MatMulGrad;
  n.opset = 1;
  n.inputs = {"dy", "a", "b"};
  n.outputs = {"da", "db"};
  g.nodes.push_back(n);
  for (const char* name : {"dy", "a", "b"}) g.inputs.push_back(ValueInfo{name, DType::F32, {}});
  Executor ex(g);
  auto out = ex.run({{"dy", dy}, {"a", a}, {"b", b}}, {"da", "db"});
  return {out.at("da"), out.at("db")};
}

// dA[ia, m, k] = Σ_{i → ia} Σ_n dY[i, m, n]·B[ib(i), k, n], dB likewise, in double, for 3-D
// A [Ba, M, K], B [Bb, K, N] with Ba, Bb ∈ {1, nb}.
void check_batched_matmul_grad(int64_t Ba, int64_t Bb, int64_t M, int64_t K, int64_t N) {
  std::mt19937 rng(7);
  const int64_t nb = std::max(Ba, Bb);
  Tensor a = random_f32({Ba, M, K}, rng), b = random_f32({Bb, K, N}, rng);
  Tensor dy = random_f32({nb, M, N}, rng);
  auto [da, db] = run_matmul_grad(dy, a, b);
  REQUIRE(da.shape() == a.shape());
  REQUIRE(db.shape() == b.shape());
  std::vector<double> ra(a.numel(), 0.0), rb(b.numel(), 0.0);
  const float *A = a.data<float>(), *B = b.data<float>(), *G = dy.data<float>();
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ia = Ba == 1 ? 0 : i, ib = Bb == 1 ? 0 : i;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const double g = G[(i * M + m) * N + n];
        for (int64_t k = 0; k < K; ++k) {
          ra[(ia * M + m) * K + k] += g * B[(ib * K + k) * N + n];
          rb[(ib * K + k) * N + n] += g * A[(ia * M + m) * K + k];
        }
      }
  }
  double worst = 0;
  for (int64_t j = 0; j < a.numel(); ++j)
    worst = std::max(worst, std::abs(ra[j] - da.data<float>()[j]) / (1 + std::abs(ra[j])));
  for (int64_t j = 0; j < b.numel(); ++j)
    worst = std::max(worst, std::abs(rb[j] - db.data<float>()[j]) / (1 + std::abs(rb[j])));
  CHECK(worst < 1e-4);
}

}  // namespace

TEST_CASE("gradients: MatMul, 2-D and 1-D operands") {
  SUBCASE("[3,4] x [4,5]") { test::check_gradients(matmul({3, 4}, {4, 5})); }
  SUBCASE("vector x matrix") { test::check_gradients(matmul({4}, {4, 5})); }
  SUBCASE("matrix x vector") { test::check_gradients(matmul({3, 4}, {4})); }
  SUBCASE("dot product") { test::check_gradients(matmul({4}, {4})); }
  SUBCASE("batched x vector") { test::check_gradients(matmul({2, 3, 4}, {4})); }
  SUBCASE("vector x batched") { test::check_gradients(matmul({4}, {2, 4, 5})); }
}

TEST_CASE("gradients: MatMul with batches and broadcast batch dimensions") {
  SUBCASE("shared B (Linear on a sequence)") { test::check_gradients(matmul({2, 3, 4}, {4, 5})); }
  SUBCASE("shared A") { test::check_gradients(matmul({3, 4}, {2, 4, 5})); }
  SUBCASE("same batch") { test::check_gradients(matmul({2, 3, 4}, {2, 4, 5})); }
  SUBCASE("both broadcast") { test::check_gradients(matmul({2, 1, 3, 4}, {3, 4, 2})); }
  SUBCASE("size-1 batch dim against a full one") {
    test::check_gradients(matmul({1, 3, 2}, {4, 2, 3}));
  }
  SUBCASE("only A wanted, B a constant") {
    GradCheckCase c = matmul({2, 3, 4}, {2, 4, 5});
    c.inputs[1].differentiable = false;
    std::mt19937 rng(3);
    c.inputs[1].value = test::random_tensor({2, 4, 5}, -1, 1, rng, {});
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: Gemm transposes, alpha, beta and C broadcasts") {
  SUBCASE("every transA/transB, C [M,N] and [N]") {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      CAPTURE(ta);
      CAPTURE(tb);
      const Shape a = ta ? Shape{4, 3} : Shape{3, 4};  // M = 3, K = 4
      const Shape b = tb ? Shape{5, 4} : Shape{4, 5};  // N = 5
      test::check_gradients(gemm(a, b, ta, tb, 1.0f, 1.0f, {3, 5}));
      test::check_gradients(gemm(a, b, ta, tb, 0.5f, -2.0f, {5}));
    }
  }
  SUBCASE("C as a column [M,1]") {
    test::check_gradients(gemm({3, 4}, {4, 5}, 0, 0, 1, 0.7f, {3, 1}));
  }
  SUBCASE("C as a row [1,N]") {
    test::check_gradients(gemm({3, 4}, {4, 5}, 0, 0, 2, 1.5f, {1, 5}));
  }
  SUBCASE("C a scalar") { test::check_gradients(gemm({3, 4}, {5, 4}, 0, 1, 1, 3.0f, {})); }
  SUBCASE("C [1]") { test::check_gradients(gemm({4, 3}, {4, 5}, 1, 0, 1, 1, {1})); }
  SUBCASE("no C") { test::check_gradients(gemm({3, 4}, {5, 4}, 0, 1, 1.5f, 1, {}, false)); }
}

TEST_CASE("MatMulGrad kernel: threaded and broadcast paths against direct loops") {
  SUBCASE("many small products, one per thread") { check_batched_matmul_grad(16, 16, 7, 9, 5); }
  SUBCASE("B broadcast: dB sums over the batch") { check_batched_matmul_grad(12, 1, 20, 33, 17); }
  SUBCASE("A broadcast: dA sums over the batch") { check_batched_matmul_grad(1, 12, 20, 33, 17); }
  SUBCASE("large products split over the threads") { check_batched_matmul_grad(3, 3, 130, 70, 90); }
}

TEST_CASE("MatMulGrad kernel: a dY of the wrong shape is named") {
  std::mt19937 rng(1);
  Tensor a = random_f32({3, 4}, rng), b = random_f32({4, 5}, rng), dy = random_f32({3, 6}, rng);
  CHECK_THROWS_WITH_AS(run_matmul_grad(dy, a, b),
                       doctest::Contains("gradient dY [3, 6] does not match the product"), Error);
}

TEST_CASE("gradients: Det is the cofactor matrix (batched, 1x1 to 4x4, a singular matrix)") {
  auto det = [](Shape s) {
    GradCheckCase c;
    c.op = "Det";
    c.inputs = {in(std::move(s))};
    c.declare_shapes = true;
    return c;
  };
  test::check_gradients(det({3, 3}));
  test::check_gradients(det({2, 3, 3}));
  test::check_gradients(det({2, 1, 4, 4}));
  test::check_gradients(det({2, 2}));
  test::check_gradients(det({3, 1, 1}));
  // Singular (rank 2): det·A⁻ᵀ does not exist, the cofactors do (and are not all zero).
  GradCheckCase s = det({3, 3});
  s.inputs = {test::at(Tensor::from_vector<float>({3, 3}, {1, 2, 3, 2, 4, 6, 1, 0, 1}))};
  test::check_gradients(s);
  // Without a known matrix size the gradient cannot be laid out: named.
  GradCheckCase u = det({3, 3});
  u.declare_shapes = false;
  CHECK_THROWS_WITH_AS(test::check_gradients(u),
                       doctest::Contains("the gradient of Det needs the rank of 'x0'"), Error);
}
