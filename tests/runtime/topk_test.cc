// TopK (runtime/cpu/kernels/topk.cc): hand-computed values for largest/smallest, ties (the lower
// index first), sorted = 0, negative and leading axes, k = 0 and k = dim, the three opsets'
// forms of k, NaN, other dtypes (F16, F64, int64), and the errors naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

using V = std::vector<double>;
using I = std::vector<int64_t>;

Tensor k_of(int64_t k) { return Tensor::from_vector<int64_t>({1}, {k}); }

V values(const Tensor& t) {
  V v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.item_as_double(i));
  return v;
}

// TopK at opset 11 with k as input 1; returns {Values, Indices}.
std::vector<Tensor> topk(const Tensor& x, int64_t k, std::map<std::string, Attribute> attrs = {}) {
  return run_node("TopK", 11, attrs, {x, k_of(k)}, 2);
}

// 0..11 as [3, 4] (the ONNX test_top_k input).
Tensor m34() { return iota_f({3, 4}); }

std::string error_of(const std::vector<Tensor>& in, int64_t opset = 11,
                     std::map<std::string, Attribute> attrs = {}) {
  try {
    run_node("TopK", opset, attrs, in, 2);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("TopK: the k largest along the last axis, sorted, with their indices") {
  auto r = topk(m34(), 3);
  CHECK(r[0].shape() == Shape{3, 3});
  CHECK(r[0].dtype() == DType::F32);
  CHECK(r[1].dtype() == DType::I64);
  CHECK(values(r[0]) == V{3, 2, 1, 7, 6, 5, 11, 10, 9});
  CHECK(ivec(r[1]) == I{3, 2, 1, 3, 2, 1, 3, 2, 1});
  // largest = 0: the k smallest, ascending.
  r = topk(m34(), 3, {{"largest", attr_i(0)}});
  CHECK(values(r[0]) == V{0, 1, 2, 4, 5, 6, 8, 9, 10});
  CHECK(ivec(r[1]) == I{0, 1, 2, 0, 1, 2, 0, 1, 2});
  // sorted = 0 leaves the order to the implementation: ours is the sorted one.
  CHECK(values(topk(m34(), 3, {{"sorted", attr_i(0)}})[0]) == values(topk(m34(), 3)[0]));
}

TEST_CASE("TopK ties: equal values keep the lower index first") {
  const Tensor x = Tensor::from_vector<float>({2, 5}, {1, 3, 3, 2, 3, 2, 1, 2, 1, 2});
  auto r = topk(x, 3);
  CHECK(values(r[0]) == V{3, 3, 3, 2, 2, 2});
  CHECK(ivec(r[1]) == I{1, 2, 4, 0, 2, 4});
  r = topk(x, 4, {{"largest", attr_i(0)}});
  CHECK(values(r[0]) == V{1, 2, 3, 3, 1, 1, 2, 2});
  CHECK(ivec(r[1]) == I{0, 3, 1, 2, 1, 3, 0, 2});
  // -0.0 and +0.0 are equal: a tie, decided by the index.
  const Tensor z = Tensor::from_vector<float>({3}, {0.0f, -0.0f, -1.0f});
  CHECK(ivec(topk(z, 2)[1]) == I{0, 1});
  CHECK(ivec(topk(z, 3, {{"largest", attr_i(0)}})[1]) == I{2, 0, 1});
}

TEST_CASE("TopK along a negative or leading axis (strided lanes)") {
  // X [2, 3, 2] = 0..11 with a twist: lane (0, :, 1) is {1, 5, 3}.
  const Tensor x =
      Tensor::from_vector<float>({2, 3, 2}, {0, 1, 2, 5, 4, 3, 6, 7, 8, 9, 10, 11});
  auto r = topk(x, 2, {{"axis", attr_i(-2)}});
  CHECK(r[0].shape() == Shape{2, 2, 2});
  // lanes: (0,:,0) = {0,2,4}, (0,:,1) = {1,5,3}, (1,:,0) = {6,8,10}, (1,:,1) = {7,9,11}
  CHECK(values(r[0]) == V{4, 5, 2, 3, 10, 11, 8, 9});
  CHECK(ivec(r[1]) == I{2, 1, 1, 2, 2, 2, 1, 1});
  r = topk(x, 1, {{"axis", attr_i(0)}, {"largest", attr_i(0)}});
  CHECK(r[0].shape() == Shape{1, 3, 2});
  CHECK(values(r[0]) == V{0, 1, 2, 5, 4, 3});
  CHECK(ivec(r[1]) == I{0, 0, 0, 0, 0, 0});
  // The ONNX test_top_k_negative_axis form: axis -1 on [3, 4].
  r = topk(m34(), 2, {{"axis", attr_i(-1)}});
  CHECK(values(r[0]) == V{3, 2, 7, 6, 11, 10});
}

TEST_CASE("TopK with k = 0 and k = the axis size") {
  auto r = topk(m34(), 0);
  CHECK(r[0].shape() == Shape{3, 0});
  CHECK(r[1].shape() == Shape{3, 0});
  r = topk(m34(), 4, {{"largest", attr_i(0)}});
  CHECK(values(r[0]) == values(m34()));
  CHECK(ivec(r[1]) == I{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  // An empty lane count (a 0 dimension off the axis).
  r = topk(Tensor(DType::F32, {0, 4}), 2);
  CHECK(r[0].shape() == Shape{0, 2});
}

TEST_CASE("TopK opsets: k as an attribute (1) and as an input (10); largest from 11") {
  auto r = run_node("TopK", 1, {{"k", attr_i(2)}}, {m34()}, 2);
  CHECK(values(r[0]) == V{3, 2, 7, 6, 11, 10});
  CHECK(ivec(r[1]) == I{3, 2, 3, 2, 3, 2});
  r = run_node("TopK", 10, {}, {m34(), k_of(1)}, 2);
  CHECK(values(r[0]) == V{3, 7, 11});
  // A scalar K is accepted too.
  r = run_node("TopK", 10, {}, {m34(), Tensor::from_vector<int64_t>({}, {1})}, 2);
  CHECK(ivec(r[1]) == I{3, 3, 3});
}

TEST_CASE("TopK: NaN ranks above every number") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({4}, {1, nan, 3, -2});
  auto r = topk(x, 2);
  CHECK(std::isnan(r[0].item_as_double(0)));
  CHECK(r[0].item_as_double(1) == 3);
  CHECK(ivec(r[1]) == I{1, 2});
  r = topk(x, 4, {{"largest", attr_i(0)}});
  CHECK(ivec(r[1]) == I{3, 0, 2, 1});
}

TEST_CASE("TopK in F16, F64 and int64") {
  const Tensor x = Tensor::from_vector<float>({2, 4}, {0.5f, -1.25f, 3, 3, 2, 7, -7, 0});
  const V want_v = {3, 3, 0.5, 7, 2, 0};
  const I want_i = {2, 3, 0, 1, 0, 3};
  auto r = topk(cast_tensor(x, DType::F16), 3);
  CHECK(r[0].dtype() == DType::F16);
  CHECK(values(r[0]) == want_v);
  CHECK(ivec(r[1]) == want_i);
  r = topk(cast_tensor(x, DType::BF16), 3);
  CHECK(r[0].dtype() == DType::BF16);
  CHECK(ivec(r[1]) == want_i);
  r = topk(cast_tensor(x, DType::F64), 3);
  CHECK(r[0].dtype() == DType::F64);
  CHECK(values(r[0]) == want_v);
  const Tensor xi = Tensor::from_vector<int64_t>({2, 4}, {5, -1, 9, 5, 2, 7, -7, 0});
  r = topk(xi, 2, {{"largest", attr_i(0)}});
  CHECK(r[0].dtype() == DType::I64);
  CHECK(ivec(r[0]) == I{-1, 5, -7, 0});
  CHECK(ivec(r[1]) == I{1, 0, 2, 3});
}

TEST_CASE("TopK errors name the node, k and the shape") {
  CHECK(error_of({m34(), k_of(5)}) ==
        "node 'n0' (TopK, opset 11): k = 5 is larger than axis 1 (size 4) of input [3, 4]");
  CHECK(error_of({m34(), k_of(4)}, 11, {{"axis", attr_i(0)}})
            .find("k = 4 is larger than axis 0 (size 3) of input [3, 4]") != std::string::npos);
  CHECK(error_of({m34(), k_of(-1)}).find("k must not be negative, got -1") !=
        std::string::npos);
  CHECK(error_of({m34(), Tensor::from_vector<int64_t>({2}, {1, 2})})
            .find("K must hold one value, got shape [2]") != std::string::npos);
  CHECK(error_of({m34(), Tensor::from_vector<float>({1}, {1})})
            .find("K must be int64, got float32") != std::string::npos);
  CHECK(error_of({m34(), k_of(1)}, 11, {{"axis", attr_i(2)}})
            .find("axis 2 is out of range for input [3, 4]") != std::string::npos);
  CHECK(error_of({Tensor::scalar<float>(1), k_of(0)})
            .find("input must have rank 1 or more") != std::string::npos);
  CHECK(error_of({m34()}, 1).find("attribute k is required before opset 10") !=
        std::string::npos);
}
