// Gradients of Einsum, a composite op (runtime/composite/einsum.cc): autodiff differentiates its
// expansion (Transpose, Reshape, MatMul, Mul, Unsqueeze, ReduceSum, Slice, and the Shape
// arithmetic of run-time reshape targets, which carries no gradient). Double-precision
// finite-difference checks (grad_check.h) over matmuls, transposes, sums, outer products, three
// operands, diagonals, broadcasting and the ellipsis, with the inputs' shapes declared (static
// reshape targets) and not declared (targets computed at run time).
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::in;

namespace {

GradCheckCase einsum(const std::string& equation, std::vector<Shape> shapes, bool declare) {
  GradCheckCase c;
  c.op = "Einsum";
  c.opset = 12;
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = equation;
  c.attrs["equation"] = a;
  for (Shape& s : shapes) c.inputs.push_back(in(std::move(s)));
  c.declare_shapes = declare;
  return c;
}

}  // namespace

TEST_CASE("grad Einsum: finite differences, shapes declared and not") {
  const std::vector<std::pair<std::string, std::vector<Shape>>> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bkj->bik", {{2, 3, 4}, {2, 5, 4}}},
      {"abc,cd->abd", {{2, 3, 4}, {4, 2}}},  // merged M dims
      {"ij->ji", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 2}, {2, 2}}},
      {"ij,ij->i", {{3, 4}, {3, 4}}},
      {"ij,ij->ij", {{1, 4}, {3, 4}}},  // broadcasting
      {"ii->i", {{4, 4}}},
      {"bii->bi", {{2, 3, 3}}},
      {"iji->j", {{3, 2, 3}}},
  };
  for (const auto& [eq, shapes] : cases)
    for (bool declare : {true, false}) {
      CAPTURE(eq);
      CAPTURE(declare);
      oat::test::check_gradients(einsum(eq, shapes, declare));
    }
  // The ellipsis needs the ranks.
  oat::test::check_gradients(einsum("...ij,...jk->...ik", {{2, 1, 3, 4}, {2, 4, 2}}, true));
  oat::test::check_gradients(einsum("...ii->...i", {{2, 3, 3}}, true));
  oat::test::check_gradients(einsum("ij,jk->ik", {{3, 1}, {4, 2}}, true));  // contracted 1 vs 4
}
