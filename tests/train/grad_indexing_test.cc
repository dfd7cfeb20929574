// Gradients through the index-driven composite ops (runtime/composite/indexing.cc): GatherND
// (Gather's), ScatterElements and ScatterND (data and updates: Where's and the scatter-adds'),
// ReverseSequence (GatherElements'), OneHot (w.r.t. its values), and the scatter-adds GatherGrad
// / GatherElementsGrad themselves (d(dY) = Gather / GatherElements of the incoming gradient). Double-precision finite
// differences (grad_check.h), shapes declared as the expansions need them.
#include "grad_check.h"

using namespace oat;
using oat::test::at;
using oat::test::fixed;
using oat::test::GradCheckCase;
using oat::test::in;

namespace {

Attribute int1(int64_t v) { return train::GradientContext::attr_int(v); }
Attribute str1(const std::string& v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = v;
  return a;
}
Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); }

GradCheckCase op_case(const std::string& op, int64_t opset,
                      std::vector<oat::test::GradCheckInput> ins,
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
  oat::test::check_gradients(op_case(
      "GatherGrad", 1, {in({2, 3}), fixed(i64s({2}, {4, 3})), fixed(i64s({2}, {1, 1}))}, {}));
  oat::test::check_gradients(
      op_case("GatherElementsGrad", 1,
              {in({2, 2}), fixed(i64s({2}, {3, 2})), fixed(i64s({2, 2}, {2, -1, 2, 0}))},
              {{"axis", int1(0)}}));
}

TEST_CASE("gradients: GatherND (through its expansion)") {
  oat::test::check_gradients(
      op_case("GatherND", 13, {in({3, 4, 2}), fixed(i64s({3, 2}, {0, 1, -1, 3, 0, 1}))}));
  oat::test::check_gradients(op_case("GatherND", 13,
                                     {in({2, 3, 4}), fixed(i64s({2, 2, 1}, {2, -1, 0, 0}))},
                                     {{"batch_dims", int1(1)}}));
}

TEST_CASE("gradients: ScatterElements, none and add, data and updates") {
  // none: indices distinct along the axis per lane (duplicates are undefined).
  oat::test::check_gradients(op_case(
      "ScatterElements", 13, {in({3, 4}), fixed(i64s({2, 3}, {0, 2, -1, 1, 0, 0})), in({2, 3})},
      {{"axis", int1(0)}}));
  oat::test::check_gradients(op_case(
      "ScatterElements", 16, {in({3, 4}), fixed(i64s({2, 3}, {0, 0, -1, 3, 3, 1})), in({2, 3})},
      {{"axis", int1(1)}, {"reduction", str1("add")}}));
  oat::test::check_gradients(
      op_case("Scatter", 9, {in({4, 2}), fixed(i64s({1, 2}, {3, 1})), in({1, 2})}));
}

TEST_CASE("gradients: ScatterND, none and add") {
  oat::test::check_gradients(
      op_case("ScatterND", 13, {in({4, 3, 2}), fixed(i64s({2, 2}, {0, 1, -1, 2})), in({2, 2})}));
  oat::test::check_gradients(op_case("ScatterND", 16,
                                     {in({4, 3}), fixed(i64s({3, 1}, {1, 1, -4})), in({3, 3})},
                                     {{"reduction", str1("add")}}));
}

TEST_CASE("gradients: ScatterElements and ScatterND with mul, max and min (ScatterReduce)") {
  // Random values: no ties, no zeros. Duplicate targets (two updates into one element).
  for (const char* r : {"mul", "max", "min"}) {
    CAPTURE(r);
    oat::test::check_gradients(op_case(
        "ScatterElements", 18, {in({3, 4}), fixed(i64s({2, 3}, {0, 0, -1, 0, 3, 1})), in({2, 3})},
        {{"axis", int1(1)}, {"reduction", str1(r)}}));
    oat::test::check_gradients(op_case("ScatterND", 18,
                                       {in({4, 3}), fixed(i64s({3, 1}, {1, 1, -4})), in({3, 3})},
                                       {{"reduction", str1(r)}}));
  }
  // mul with zero updates: one zero among the updates of an element (its own gradient is the
  // product of the others), two zeros (every gradient 0), and zero data. The product is linear
  // in each factor, so central differences are exact there.
  oat::test::check_gradients(
      op_case("ScatterElements", 18,
              {at(Tensor::from_vector<float>({2, 3}, {0.5f, 0, -1.5f, 2, 1.25f, -0.75f})),
               fixed(i64s({2, 4}, {0, 0, 1, 2, 1, 1, 2, 2})),
               at(Tensor::from_vector<float>({2, 4}, {0, 3, -2, 0.5f, 0, 0, 1.5f, -1}))},
              {{"axis", int1(1)}, {"reduction", str1("mul")}}));
}

TEST_CASE("gradients: ReverseSequence (through its expansion)") {
  oat::test::check_gradients(
      op_case("ReverseSequence", 10, {in({4, 3, 2}), fixed(i64s({3}, {4, 2, 1}))}));
  oat::test::check_gradients(op_case("ReverseSequence", 10,
                                     {in({3, 4}), fixed(i64s({3}, {3, 4, 1}))},
                                     {{"time_axis", int1(1)}, {"batch_axis", int1(0)}}));
}

TEST_CASE("gradients: OneHot w.r.t. its values [off, on] (through its expansion)") {
  // Y = on where indices hit, else off: dY/d(on) counts the hits, dY/d(off) the rest.
  oat::test::check_gradients(op_case(
      "OneHot", 11,
      {fixed(i64s({2, 3}, {0, 3, -1, 2, 5, 1})), fixed(Tensor::scalar<int64_t>(4)), in({2})}));
  oat::test::check_gradients(op_case("OneHot", 11,
                                     {fixed(i64s({3}, {1, 0, 2})),
                                      fixed(Tensor::scalar<int64_t>(3)), in({2})},
                                     {{"axis", int1(0)}}));
}
