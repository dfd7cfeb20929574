// Gradients of the scatter-adds GatherGrad / GatherElementsGrad in their first input
// (d(dY) = Gather / GatherElements of the incoming gradient): double-precision finite
// differences (grad_check.h).
#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::fixed;
using oat::test::in;

namespace {

Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); }

GradCheckCase op_case(const std::string& op, int64_t opset, std::vector<oat::test::GradCheckInput> ins,
                      std::map<std::string, Attribute> attrs = {}) {
  GradCheckCase c;
  c.op = op;
  c.opset = opset;
  c.inputs = std::move(ins);
  c.attrs = std::move(attrs);
  c.declare_shapes = true;  // the expansions read ranks and the indexed dims
  return c;
}

}  // namespace

TEST_CASE("gradients: GatherGrad and GatherElementsGrad (the scatter-adds) in their dY") {
  oat::test::check_gradients(op_case("GatherGrad", 1,
                                     {in({2, 3}), fixed(i64s({2}, {4, 3})), fixed(i64s({2}, {1, 1}))},
                                     {}));
  oat::test::check_gradients(op_case(
      "GatherElementsGrad", 1,
      {in({2, 2}), fixed(i64s({2}, {3, 2})), fixed(i64s({2, 2}, {2, -1, 2, 0}))},
      {{"axis", int1(0)}}));
}
