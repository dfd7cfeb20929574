// Agreement cases (agreement_case.h): softmax family, reductions and their schedules, shapes and
// movement, TopK.
#include "tests/cuda/agreement_case.h"

namespace oat_agree {

void add_reduce_shape_cases(std::vector<Case>& v) {
  const float nan = std::nanf("");
  // softmax family and reductions
  v.push_back({"Softmax", 13, {}, {flt({4, 33})}});
  v.push_back({"LogSoftmax", 13, {}, {flt({4, 1000})}});
  // a warp per row (len ≤ 512): a last block with 5 of its 8 rows, the longest warp row
  v.push_back({"Softmax",
               13,
               {},
               {flt({2, 4, 37, 28})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "warp rows"});
  v.push_back({"LogSoftmax",
               13,
               {},
               {flt({3, 512})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "warp rows"});
  v.push_back({"Softmax", 13, {{"axis", attr_i(1)}}, {flt({2, 5, 3})}});
  v.push_back({"LogSoftmax", 11, {{"axis", attr_i(1)}}, {flt({2, 3, 4})}});
  v.push_back({"ReduceSum", 13, {}, {flt({3, 4, 5}), ints({1})}});
  v.push_back(
      {"ReduceMean", 13, {{"axes", attr_ints({0, 2})}, {"keepdims", attr_i(0)}}, {flt({3, 4, 5})}});
  v.push_back({"ReduceMax", 13, {}, {flt({3, 4, 5})}});
  v.push_back({"ReduceMin", 13, {{"axes", attr_ints({-1})}}, {flt({3, 4, 5})}});
  v.push_back({"ReduceSumSquare", 13, {{"axes", attr_ints({1})}}, {flt({3, 4, 5})}});
  v.push_back({"ReduceL1", 13, {{"axes", attr_ints({1})}}, {flt({3, 4, 5})}});
  v.push_back({"ReduceL2", 13, {{"axes", attr_ints({0})}}, {flt({3, 4, 5})}});
  v.push_back({"ReduceLogSumExp", 13, {{"axes", attr_ints({2})}}, {flt({3, 4, 5})}});
  {  // a +inf maximum gives +inf (not inf − inf = NaN); a row of −inf gives −inf
    const float inf = std::numeric_limits<float>::infinity();
    v.push_back({"ReduceLogSumExp",
                 13,
                 {{"axes", attr_ints({1})}},
                 {vals({3, 3}, {1.f, inf, 2.f, -inf, -inf, -inf, 0.5f, -1.f, 2.f})},
                 1,
                 {DType::F32, DType::F16, DType::BF16},
                 "infinities"});
  }
  v.push_back({"ReduceLogSum", 13, {{"axes", attr_ints({2})}}, {pos({3, 4, 5})}});
  v.push_back({"ReduceProd", 13, {{"axes", attr_ints({2})}}, {pos({3, 4, 3})}});
  v.push_back({"ReduceSum", 13, {}, {flt({4096 + 17}), ints({0})}, 1, {DType::F32}, "long"});
  // Schedules (reduce_impl.h): columns split over 128 chunks (a bias gradient), columns with
  // two reduced dims around the kept ones, rows split into chunks (few outputs, long rows),
  // each op's finish (mean, sqrt, log) applied once after the chunks combine.
  v.push_back({"ReduceSum",
               13,
               {},
               {flt({8192, 40}), ints({0})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "columns, split"});
  v.push_back({"ReduceMean",
               13,
               {{"axes", attr_ints({0, 2})}},
               {flt({3, 5, 300, 7})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "columns, two reduced dims, split"});
  v.push_back({"ReduceMin",
               13,
               {{"axes", attr_ints({0})}},
               {flt({300, 7})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "columns, split"});
  v.push_back({"ReduceMax",
               13,
               {{"axes", attr_ints({1})}},
               {flt({2, 20000})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "rows, split"});
  v.push_back({"ReduceL2",
               13,
               {{"axes", attr_ints({1})}},
               {flt({3, 9000})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "rows, split"});
  v.push_back({"ReduceLogSum",
               13,
               {{"axes", attr_ints({0, 2})}},
               {pos({4, 3, 3000})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "rows, two reduced dims, split"});
  // shapes and movement
  v.push_back({"Reshape", 14, {}, {flt({2, 3, 4}), ints({4, -1})}});
  v.push_back({"Flatten", 13, {{"axis", attr_i(2)}}, {flt({2, 3, 4})}});
  v.push_back({"Unsqueeze", 13, {}, {flt({2, 3}), ints({0, 3})}});
  v.push_back({"Squeeze", 13, {}, {flt({2, 1, 3}), ints({1})}});
  v.push_back({"Identity", 16, {}, {flt({2, 3})}});
  v.push_back({"Transpose", 13, {{"perm", attr_ints({0, 2, 1, 3})}}, {flt({2, 3, 4, 5})}});
  v.push_back({"Transpose", 13, {}, {flt({3, 4})}});
  v.push_back(
      {"Slice", 13, {}, {flt({4, 6}), ints({1, -5}), ints({3, 100}), ints({0, 1}), ints({1, 2})}});
  v.push_back({"Slice", 13, {}, {flt({4, 6}), ints({-1}), ints({-100}), ints({1}), ints({-2})}});
  v.push_back(
      {"Concat", 13, {{"axis", attr_i(1)}}, {flt({2, 3, 2}), flt({2, 1, 2}), flt({2, 2, 2})}});
  v.push_back({"Split", 13, {{"axis", attr_i(1)}}, {flt({2, 5, 3}), ints({2, 3})}, 2});
  v.push_back({"Gather", 13, {{"axis", attr_i(1)}}, {flt({3, 4, 2}), ints({0, 3, 1, -1}, {2, 2})}});
  v.push_back({"Expand", 13, {}, {flt({3, 1}), ints({2, 3, 4})}});
  v.push_back({"Trilu",
               14,
               {},
               {flt({2, 4, 5}), ints({1})},
               1,
               {DType::F32, DType::F16, DType::BF16, DType::F64}});
  v.push_back({"Trilu", 14, {{"upper", attr_i(0)}}, {flt({5, 3}), ints({-1})}});
  v.push_back({"Trilu",
               14,
               {{"upper", attr_i(0)}},
               {flt({3, 3})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "no k"});
  v.push_back({"Pad", 13, {}, {flt({2, 3}), ints({1, 2, 0, -1})}});
  v.push_back({"Pad",
               13,
               {},
               {flt({2, 3}), ints({0, 1, 1, 2}), flt({})},
               1,
               {DType::F32, DType::F16, DType::BF16},
               "value"});
  v.push_back({"Pad", 13, {{"mode", attr_s("reflect")}}, {flt({3, 4}), ints({2, 3, 1, 5})}});
  v.push_back({"Pad", 13, {{"mode", attr_s("edge")}}, {flt({3, 4}), ints({1, 2, 3, 1})}});
  v.push_back({"Pad", 19, {{"mode", attr_s("wrap")}}, {flt({3, 4}), ints({1, 5, 2, 1})}});
  v.push_back({"Pad", 18, {}, {flt({2, 3, 4}), ints({1, 2}), In{In::Float, {}}, ints({-1})}});
  v.push_back({"Tile", 13, {}, {flt({2, 3, 2}), ints({2, 1, 3})}});
  v.push_back({"DepthToSpace", 13, {{"blocksize", attr_i(2)}}, {flt({2, 8, 3, 2})}});
  v.push_back({"DepthToSpace",
               13,
               {{"blocksize", attr_i(2)}, {"mode", attr_s("CRD")}},
               {flt({2, 8, 3, 2})}});
  v.push_back({"SpaceToDepth", 13, {{"blocksize", attr_i(2)}}, {flt({2, 3, 4, 6})}});
  v.push_back({"Hardmax", 13, {}, {flt({4, 9})}});
  v.push_back({"Hardmax", 11, {{"axis", attr_i(1)}}, {flt({2, 3, 4})}});
  v.push_back({"CumSum", 14, {}, {flt({3, 5, 2}), ints({1}, Shape{})}});
  v.push_back({"CumSum",
               14,
               {{"exclusive", attr_i(1)}, {"reverse", attr_i(1)}},
               {flt({3, 5}), ints({-1}, Shape{})}});
  v.push_back({"ArgMax", 13, {{"axis", attr_i(1)}}, {flt({3, 7, 2})}});
  v.push_back({"ArgMin", 13, {{"axis", attr_i(-1)}, {"keepdims", attr_i(0)}}, {flt({3, 7})}});
  // TopK: indices must be equal, so ties (F16/BF16 rounding makes some) and NaN follow one rule
  // on both backends: the lower index first, NaN above every number.
  {
    const std::vector<DType> all3 = {DType::F32, DType::F16, DType::BF16};
    v.push_back({"TopK", 11, {}, {flt({3, 17}), ints({5})}, 2});
    v.push_back({"TopK",
                 11,
                 {{"axis", attr_i(0)}, {"largest", attr_i(0)}},
                 {flt({6, 4, 3}), ints({3})},
                 2,
                 all3,
                 "axis 0, smallest"});
    v.push_back({"TopK",
                 11,
                 {{"axis", attr_i(-2)}, {"sorted", attr_i(0)}},
                 {vals({2, 6, 2}, {1, 3, 3, 2, 3, 0,    -1,   -1, 2,   2, 0, -1,
                                   5, 5, 5, 5, 0, -0.f, -0.f, 0,  nan, 1, 1, nan}),
                  ints({4})},
                 2,
                 all3,
                 "ties, signed zeros, NaN"});
    v.push_back({"TopK", 1, {{"k", attr_i(2)}}, {flt({4, 5})}, 2, all3, "opset 1"});
    v.push_back({"TopK", 10, {}, {flt({2, 300}), ints({300})}, 2, all3, "k = len"});
    v.push_back({"TopK", 11, {}, {flt({3, 4}), ints({0})}, 2, all3, "k = 0"});
  }
}

}  // namespace oat_agree
