// String tensors (runtime/tensor.h, runtime/string_moves.h): storage, Cast both ways
// (runtime/string_convert.h), StringNormalizer, TfIdfVectorizer's pool_strings, the movement ops
// on strings, and the refusal of every other op. ONNX's 18 string cases run in conformance_tests.
#include <doctest/doctest.h>
#include <locale.h>

#include <clocale>
#include <cmath>
#include <string>
#include <vector>

#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

using S = std::vector<std::string>;

Tensor strs(Shape shape, const S& v) {
  return Tensor::from_vector<std::string>(std::move(shape), v);
}
Tensor strs(const S& v) { return strs({static_cast<int64_t>(v.size())}, v); }

S svec(const Tensor& t) {
  REQUIRE(t.dtype() == DType::String);
  return S(t.data<std::string>(), t.data<std::string>() + t.numel());
}

Tensor cast(const Tensor& x, int64_t to) { return run1("Cast", 13, {{"to", attr_i(to)}}, {x}); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool has_utf8_locale() {
  locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (l) freelocale(l);
  return l != static_cast<locale_t>(nullptr);
}

}  // namespace

TEST_CASE("string tensors hold std::string elements: empty when made, deep-copied by clone") {
  Tensor t(DType::String, {2, 2});
  CHECK(svec(t) == S{"", "", "", ""});
  CHECK(dtype_name(DType::String) == std::string("string"));
  CHECK(!is_numeric(DType::String));
  t.data<std::string>()[1] = "long enough to live on the heap, not in the small buffer";
  Tensor c = t.clone();
  c.data<std::string>()[1] = "changed";
  CHECK(svec(t)[1] == "long enough to live on the heap, not in the small buffer");
  CHECK(svec(c)[1] == "changed");
  Tensor r = t.reshaped({4});  // a view: the same strings
  CHECK(r.data<std::string>() == t.data<std::string>());
  CHECK(svec(Tensor::zeros(DType::String, {3})) == S{"", "", ""});
  CHECK(error_of([&] { (void)t.item_as_double(0); }).find("string tensor has no numeric value") !=
        std::string::npos);
  CHECK(error_of([] { Tensor(DType::String, {1}, Device::CUDA); }).find("live on the host") !=
        std::string::npos);
  // No dispatch over String: a numeric kernel given one fails by name.
  CHECK_THROWS_WITH_AS(dispatch_dtype(DType::String, [](auto) { return 0; }),
                       "unsupported dtype string", Error);
}

TEST_CASE("Cast from string parses plain, scientific and special values") {
  const Tensor x = strs({"3.5", " -2 ", "1e-5", "1E8", "inf", "-INF", "+Inf", "NaN"});
  const Tensor f = cast(x, 1);
  REQUIRE(f.dtype() == DType::F32);
  const float* p = f.data<float>();
  CHECK(p[0] == 3.5f);
  CHECK(p[1] == -2.0f);
  CHECK(p[2] == 1e-5f);  // one rounding from the text
  CHECK(p[3] == 1e8f);
  CHECK((std::isinf(p[4]) && p[4] > 0));
  CHECK((std::isinf(p[5]) && p[5] < 0));
  CHECK((std::isinf(p[6]) && p[6] > 0));
  CHECK(std::isnan(p[7]));
  // float32's nearest to 0.1 is not double 0.1 rounded twice: strtof reads it once.
  CHECK(cast(strs({"0.1"}), 1).data<float>()[0] == 0.1f);
  CHECK(cast(strs({"0.1"}), 11).data<double>()[0] == 0.1);
  CHECK(static_cast<float>(cast(strs({"0.1"}), 10).data<Eigen::half>()[0]) ==
        static_cast<float>(Eigen::half(0.1f)));
  CHECK(static_cast<float>(cast(strs({"65504"}), 10).data<Eigen::half>()[0]) == 65504.0f);
  CHECK(static_cast<float>(cast(strs({"1.5"}), 16).data<Eigen::bfloat16>()[0]) == 1.5f);
}

TEST_CASE("Cast from string to integers: whole integers exactly, other numbers truncated") {
  // 2^53 + 1 is not a double: read as an integer, it stays exact.
  CHECK(ivec(cast(strs({"9007199254740993", "-7", "100.5", "-100.5", "1e3"}), 7)) ==
        std::vector<int64_t>{9007199254740993LL, -7, 100, -100, 1000});
  const Tensor u = cast(strs({"18446744073709551615"}), 13);
  CHECK(u.data<uint64_t>()[0] == 18446744073709551615ULL);
  CHECK(ivec(cast(strs({"300"}), 2)) == std::vector<int64_t>{44});  // wraps as an integer cast
  const Tensor b = cast(strs({"0", "2", "0.0", "true", "FALSE", "nan"}), 9);
  CHECK(ivec(b) == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
}

TEST_CASE("Cast from a string that is not a number names the node, the element and the text") {
  for (const std::string bad : {"abc", "", "1.5x", "0x10", "infinity", "1 2"}) {
    CAPTURE(bad);
    const std::string e = error_of([&] { cast(strs({"1", bad}), 1); });
    CHECK(e.find("node 'n0' (Cast") != std::string::npos);
    CHECK(e.find("element 1 '" + bad + "' is not a number") != std::string::npos);
  }
}

TEST_CASE("Cast to string writes the shortest text that reads back as the same value") {
  const Tensor f = Tensor::from_vector<float>(
      {9}, {0.039187793f, 0.1f, 100000.0f, 1e-5f, 1e20f, -0.0f, INFINITY, -INFINITY, NAN});
  CHECK(svec(cast(f, 8)) ==
        S{"0.039187793", "0.1", "100000", "1e-05", "1e+20", "-0", "INF", "-INF", "NaN"});
  CHECK(svec(cast(Tensor::from_vector<double>({2}, {0.1, 1.0 / 3}), 8)) ==
        S{"0.1", "0.3333333333333333"});
  // float16 / bfloat16: shortest for their own precision, not float32's.
  const Tensor h = Tensor::from_vector<Eigen::half>(
      {3}, {Eigen::half(0.1f), Eigen::half(65504.0f), Eigen::half(-3.0f)});
  CHECK(svec(cast(h, 8)) == S{"0.1", "65500", "-3"});
  CHECK(svec(cast(Tensor::from_vector<Eigen::bfloat16>({1}, {Eigen::bfloat16(0.1f)}), 8)) ==
        S{"0.1"});
  CHECK(svec(cast(Tensor::from_vector<int64_t>({2}, {-9007199254740993LL, 42}), 8)) ==
        S{"-9007199254740993", "42"});
  CHECK(svec(cast(Tensor::from_vector<uint8_t>({1}, {255}), 8)) == S{"255"});
  CHECK(svec(cast(Tensor::from_vector<bool>({2}, {true, false}), 8)) == S{"1", "0"});
  // Every float32 text reads back as the same float32.
  Tensor many(DType::F32, {1000});
  for (int i = 0; i < 1000; ++i)
    many.data<float>()[i] = std::ldexp(1.0f + i * 0.000977f, i % 60 - 30);
  const Tensor back = cast(cast(many, 8), 1);
  for (int i = 0; i < 1000; ++i) REQUIRE(back.data<float>()[i] == many.data<float>()[i]);
  // CastLike to a string like.
  CHECK(svec(run1("CastLike", 15, {}, {Tensor::from_vector<float>({1}, {2.5f}), strs({"x"})})) ==
        S{"2.5"});
}

TEST_CASE("StringNormalizer removes stopwords and changes case") {
  auto norm = [](const Tensor& x, const std::string& action, int64_t sensitive, S stop) {
    std::map<std::string, Attribute> a = {{"is_case_sensitive", attr_i(sensitive)}};
    if (!action.empty()) a["case_change_action"] = attr_s(action);
    if (!stop.empty()) a["stopwords"] = attr_strings(std::move(stop));
    return run1("StringNormalizer", 10, a, {x});
  };
  const Tensor x = strs({"Monday", "tuesday", "monday", "WEDNESDAY"});
  CHECK(svec(norm(x, "", 1, {"monday"})) == S{"Monday", "tuesday", "WEDNESDAY"});
  CHECK(svec(norm(x, "", 0, {"monday"})) == S{"tuesday", "WEDNESDAY"});
  CHECK(svec(norm(x, "LOWER", 0, {"MONDAY"})) == S{"tuesday", "wednesday"});
  CHECK(svec(norm(x, "UPPER", 1, {})) == S{"MONDAY", "TUESDAY", "MONDAY", "WEDNESDAY"});
  // [1, C] stays two-dimensional.
  const Tensor y = norm(strs({1, 3}, {"a", "B", "c"}), "UPPER", 0, {"b"});
  CHECK(y.shape() == Shape{1, 2});
  CHECK(svec(y) == S{"A", "C"});
  // Nothing left: one empty string, [1] or [1, 1].
  const Tensor e1 = norm(strs({"x", "X"}), "", 0, {"x"});
  CHECK(e1.shape() == Shape{1});
  CHECK(svec(e1) == S{""});
  CHECK(norm(strs({1, 1}, {"x"}), "", 0, {"x"}).shape() == Shape{1, 1});
  if (has_utf8_locale()) {  // code points beyond ASCII
    CHECK(svec(norm(strs({"Ärger", "école", "ΣΟΦΙΑ"}), "LOWER", 0, {"ÉCOLE"})) ==
          S{"ärger", "σοφια"});
  } else {
    MESSAGE("C.UTF-8 is not installed: StringNormalizer maps ASCII only here");
  }
}

TEST_CASE("StringNormalizer refuses bad attributes, shapes and UTF-8, naming the node") {
  CHECK(error_of([] {
          run1("StringNormalizer", 10, {{"case_change_action", attr_s("TITLE")}}, {strs({"a"})});
        }).find("case_change_action must be \"LOWER\", \"UPPER\" or \"NONE\", got \"TITLE\"") !=
        std::string::npos);
  CHECK(error_of([] {
          run1("StringNormalizer", 10, {}, {strs({2, 2}, {"a", "b", "c", "d"})});
        }).find("X must have shape [C] or [1, C], got [2, 2]") != std::string::npos);
  const std::string e = error_of([] {
    run1("StringNormalizer", 10, {{"case_change_action", attr_s("LOWER")}},
         {strs({"ok", std::string("\xc3\x28", 2)})});
  });
  CHECK(e.find("node 'n0' (StringNormalizer") != std::string::npos);
  CHECK(e.find("element 1 is not valid UTF-8") != std::string::npos);
}

TEST_CASE("TfIdfVectorizer counts string n-grams over pool_strings") {
  // 1-grams {"a", "b"} -> columns 0, 1; 2-gram ("b", "c") -> column 2.
  const std::map<std::string, Attribute> a = {{"mode", attr_s("TF")},
                                              {"min_gram_length", attr_i(1)},
                                              {"max_gram_length", attr_i(2)},
                                              {"max_skip_count", attr_i(0)},
                                              {"pool_strings", attr_strings({"a", "b", "b", "c"})},
                                              {"ngram_counts", attr_ints({0, 2})},
                                              {"ngram_indexes", attr_ints({0, 1, 2})}};
  const Tensor x = strs({2, 4}, {"a", "b", "c", "a", "zz", "b", "c", "b"});
  const Tensor y = run1("TfIdfVectorizer", 9, a, {x});
  CHECK(y.shape() == Shape{2, 3});
  CHECK(fvec(y) == std::vector<float>{2, 1, 1, 0, 2, 1});
  // A string pool refuses integer ids, naming why.
  CHECK(error_of([&] {
          run1("TfIdfVectorizer", 9, a, {i64({1, 2})});
        }).find("the pool is pool_strings, so X must be string tokens") != std::string::npos);
}

TEST_CASE(
    "movement ops move strings: Transpose, Concat, Gather, Slice, Split, Where, Expand, Tile") {
  const Tensor x = strs({2, 3}, {"a", "b", "c", "d", "e", "f"});
  CHECK(svec(run1("Transpose", 13, {{"perm", attr_ints({1, 0})}}, {x})) ==
        S{"a", "d", "b", "e", "c", "f"});
  const Tensor cc = run1("Concat", 13, {{"axis", attr_i(0)}}, {x, strs({1, 3}, {"g", "h", "i"})});
  CHECK(cc.shape() == Shape{3, 3});
  CHECK(svec(cc) == S{"a", "b", "c", "d", "e", "f", "g", "h", "i"});
  CHECK(svec(run1("Gather", 13, {{"axis", attr_i(1)}}, {x, i64({2, 0})})) == S{"c", "a", "f", "d"});
  CHECK(svec(run1("Slice", 13, {}, {x, i64({1}), i64({3}), i64({1})})) == S{"b", "c", "e", "f"});
  const auto parts = run_node("Split", 13, {{"axis", attr_i(1)}}, {x, i64({1, 2})}, 2);
  CHECK(svec(parts[0]) == S{"a", "d"});
  CHECK(svec(parts[1]) == S{"b", "c", "e", "f"});
  const Tensor cond = Tensor::from_vector<bool>({3}, {true, false, true});
  CHECK(svec(run1("Where", 16, {}, {cond, x, strs({"-"})})) == S{"a", "-", "c", "d", "-", "f"});
  CHECK(svec(run1("Expand", 13, {}, {strs({2, 1}, {"p", "q"}), i64({2, 2})})) ==
        S{"p", "p", "q", "q"});
  CHECK(svec(run1("Tile", 13, {}, {strs({"u", "v"}), i64({2})})) == S{"u", "v", "u", "v"});
  // Views and metadata read strings directly.
  CHECK(run1("Reshape", 14, {}, {x, i64({3, 2})}).shape() == Shape{3, 2});
  CHECK(ivec(run1("Shape", 15, {}, {x})) == std::vector<int64_t>{2, 3});
}

TEST_CASE("an op that does not take strings says so by name") {
  const std::string e = error_of([] { run1("Add", 14, {}, {strs({"a"}), strs({"b"})}); });
  CHECK(e.find("node 'n0' (Add") != std::string::npos);
  CHECK(e.find("Add takes no string tensors") != std::string::npos);
  CHECK(error_of([] {
          run1("Relu", 14, {}, {strs({"a"})});
        }).find("Relu takes no string tensors") != std::string::npos);
}

TEST_CASE("Constant makes string tensors from value_string and value_strings") {
  Attribute one;
  one.kind = Attribute::Kind::String;
  one.s = "héllo";
  const Tensor s = run1("Constant", 13, {{"value_string", one}}, {});
  CHECK(s.rank() == 0);
  CHECK(svec(s) == S{"héllo"});
  CHECK(svec(run1("Constant", 13, {{"value_strings", attr_strings({"a", "", "c"})}}, {})) ==
        S{"a", "", "c"});
  CHECK(svec(run1("Constant", 13, {{"value", attr_t(strs({"t"}))}}, {})) == S{"t"});
}

TEST_CASE("a movement op given strings beside numbers, or string indices, says which input") {
  CHECK(error_of([] {
          run1("Concat", 13, {{"axis", attr_i(0)}}, {strs({"a"}), i64({1})});
        }).find("input 1 'in1' is a tensor(int64) [1], but the op's other data are strings") !=
        std::string::npos);
  CHECK(error_of([] {
          run1("Gather", 13, {}, {i64({5, 6}), strs({"0"})});
        }).find("input 1 'in1' is a tensor(string) [1]; only the data moved may be strings") !=
        std::string::npos);
  const Tensor cond = Tensor::from_vector<bool>({1}, {true});
  CHECK(error_of([&] {
          run1("Where", 16, {}, {cond, strs({"a"}), i64({1})});
        }).find("input 2 'in2' is a tensor(int64) [1], but the op's other data are strings") !=
        std::string::npos);
}

TEST_CASE("Equal and Unique compare strings") {
  const Tensor eq = run1("Equal", 19, {}, {strs({2, 2}, {"a", "b", "c", "a"}), strs({"a"})});
  CHECK(eq.dtype() == DType::Bool);
  CHECK(ivec(eq) == std::vector<int64_t>{1, 0, 0, 1});
  // Unique, sorted by byte (code point) order as numpy.unique: Y strings, the rest int64.
  const Tensor x = strs({"pear", "apple", "pear", "Zebra", "äpfel", "apple"});
  auto u = run_node("Unique", 11, {}, {x}, 4);
  CHECK(svec(u[0]) == S{"Zebra", "apple", "pear", "äpfel"});
  CHECK(ivec(u[1]) == std::vector<int64_t>{3, 1, 0, 4});        // first occurrences
  CHECK(ivec(u[2]) == std::vector<int64_t>{2, 1, 2, 0, 3, 1});  // inverse
  CHECK(ivec(u[3]) == std::vector<int64_t>{1, 2, 2, 1});        // counts
  u = run_node("Unique", 11, {{"sorted", attr_i(0)}}, {x}, 1);
  CHECK(svec(u[0]) == S{"pear", "apple", "Zebra", "äpfel"});
  // Rows along an axis.
  u = run_node("Unique", 11, {{"axis", attr_i(0)}}, {strs({3, 2}, {"b", "x", "a", "y", "b", "x"})},
               1);
  CHECK(u[0].shape() == Shape{2, 2});
  CHECK(svec(u[0]) == S{"a", "y", "b", "x"});
  CHECK(error_of([] {
          run1("Equal", 19, {}, {strs({"1"}), i64({1})});
        }).find("input 1 'in1' is a tensor(int64) [1], but the op's other inputs are strings") !=
        std::string::npos);
}
