// TfIdfVectorizer (runtime/cpu/kernels/tfidf.cc): hand-counted n-grams, the three modes, skips,
// and attribute errors naming the node. ONNX's own 7 cases run in conformance_tests.
//
// Pool: 1-grams {2, 3, 5} -> columns 0, 1, 2; 2-grams {(5, 6), (7, 8)} -> columns 3, 4.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

std::map<std::string, Attribute> attrs(const std::string& mode, int64_t min_n, int64_t max_n,
                                       int64_t skip, std::vector<float> weights = {}) {
  std::map<std::string, Attribute> a = {{"mode", attr_s(mode)},
                                        {"min_gram_length", attr_i(min_n)},
                                        {"max_gram_length", attr_i(max_n)},
                                        {"max_skip_count", attr_i(skip)},
                                        {"pool_int64s", attr_ints({2, 3, 5, 5, 6, 7, 8})},
                                        {"ngram_counts", attr_ints({0, 3})},
                                        {"ngram_indexes", attr_ints({0, 1, 2, 3, 4})}};
  if (!weights.empty()) a["weights"] = attr_floats(std::move(weights));
  return a;
}

using F = std::vector<float>;

}  // namespace

TEST_CASE("TfIdfVectorizer counts unigrams and bigrams of each row") {
  // Row 0: 2 3 5 6 2 -> unigrams 2 (x2), 3, 5; bigram (5, 6). Row 1: 7 8 7 8 0 -> (7, 8) twice.
  const Tensor x = Tensor::from_vector<int64_t>({2, 5}, {2, 3, 5, 6, 2, 7, 8, 7, 8, 0});
  Tensor y = run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 0), {x});
  CHECK(y.dtype() == DType::F32);
  CHECK(y.shape() == Shape{2, 5});
  CHECK(fvec(y) == F{2, 1, 1, 1, 0, 0, 0, 0, 0, 2});
  // Bigrams only.
  y = run1("TfIdfVectorizer", 9, attrs("TF", 2, 2, 0), {x});
  CHECK(fvec(y) == F{0, 0, 0, 1, 0, 0, 0, 0, 0, 2});
  // A 1-D row gives a 1-D output; int32 ids count the same.
  y = run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 0),
           {Tensor::from_vector<int32_t>({5}, {2, 3, 5, 6, 2})});
  CHECK(y.shape() == Shape{5});
  CHECK(fvec(y) == F{2, 1, 1, 1, 0});
}

TEST_CASE("TfIdfVectorizer skips: bigrams at distances 1..max_skip+1, unigrams once") {
  // 5 0 6 7 1 9 8: (5, 6) at distance 2, (7, 8) at distance 3; 5 counted once whatever the skip.
  const Tensor x = Tensor::from_vector<int64_t>({7}, {5, 0, 6, 7, 1, 9, 8});
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 0), {x})) == F{0, 0, 1, 0, 0});
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 1), {x})) == F{0, 0, 1, 1, 0});
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 2), {x})) == F{0, 0, 1, 1, 1});
}

TEST_CASE("TfIdfVectorizer IDF and TFIDF weigh the columns") {
  const Tensor x = Tensor::from_vector<int64_t>({5}, {2, 3, 5, 6, 2});
  const F w = {0.5f, 2, 3, 4, 5};
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("IDF", 1, 2, 0, w), {x})) == F{0.5f, 2, 3, 4, 0});
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("TFIDF", 1, 2, 0, w), {x})) == F{1, 2, 3, 4, 0});
  // Without weights, IDF is an indicator.
  CHECK(fvec(run1("TfIdfVectorizer", 9, attrs("IDF", 1, 2, 0), {x})) == F{1, 1, 1, 1, 0});
}

TEST_CASE("TfIdfVectorizer attribute errors name the node and the attribute") {
  const Tensor x = Tensor::from_vector<int64_t>({2}, {2, 3});
  auto a = attrs("BM25", 1, 2, 0);
  CHECK_THROWS_WITH_AS(run1("TfIdfVectorizer", 9, a, {x}),
                       doctest::Contains("mode must be \"TF\", \"IDF\" or \"TFIDF\""), Error);
  a = attrs("TF", 3, 2, 0);
  CHECK_THROWS_WITH_AS(run1("TfIdfVectorizer", 9, a, {x}),
                       doctest::Contains("min_gram_length <= max_gram_length"), Error);
  a = attrs("TF", 1, 2, 0);
  a["ngram_counts"] = attr_ints({0, 4});  // 3 values of 2-grams: not whole
  CHECK_THROWS_WITH_AS(run1("TfIdfVectorizer", 9, a, {x}),
                       doctest::Contains("not a whole number of 2-grams"), Error);
  a = attrs("TF", 1, 2, 0);
  a["ngram_indexes"] = attr_ints({0, 1, 2, 3});
  CHECK_THROWS_WITH_AS(run1("TfIdfVectorizer", 9, a, {x}),
                       doctest::Contains("ngram_indexes has 4 entries"), Error);
  a = attrs("TFIDF", 1, 2, 0, {1, 1});
  CHECK_THROWS_WITH_AS(run1("TfIdfVectorizer", 9, a, {x}),
                       doctest::Contains("weights has 2 entries, the output has 5 columns"), Error);
  a = attrs("TF", 1, 2, 0);
  Attribute strings;
  strings.kind = Attribute::Kind::Strings;
  strings.strings = {"a"};
  a["pool_strings"] = strings;
  CHECK_THROWS_WITH(run1("TfIdfVectorizer", 9, a, {x}), doctest::Contains("pool_strings"));
  CHECK_THROWS_WITH(
      run1("TfIdfVectorizer", 9, attrs("TF", 1, 2, 0), {Tensor::from_vector<float>({2}, {2, 3})}),
      doctest::Contains("TfIdfVectorizer"));
}
