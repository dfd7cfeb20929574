// TfIdfVectorizer (opset 9): n-gram counts of token rows, X [C] or [N, C] (int32/int64 ids over
// pool_int64s, or strings over pool_strings) -> Y [F] or [N, F] float, F = max(ngram_indexes) + 1.
//
// The pool: pool_int64s holds the n-grams back to back, grouped by length; ngram_counts[i] is
// where the (i+1)-grams start. The k-th n-gram of the pool (in pool order) counts into output
// column ngram_indexes[k]. In each row, for every skip s in 0..max_skip_count (distance d = s+1)
// and every start position p, the n-gram x[p], x[p+d], ..., x[p+(n−1)d] of each length
// n in [min_gram_length, max_gram_length] that is in the pool adds one to its column; 1-grams
// are counted at the first distance only (a skip does not change them), as ONNX Runtime does.
//   mode TF:     y = count
//   mode IDF:    y = count > 0 ? weights[col] : 0
//   mode TFIDF:  y = count · weights[col]
// weights default to 1 for every column. The pool is held as a trie (one level per token), so
// a row costs O(C · max_skip · max_gram) lookups. pool_strings: each distinct pool string is
// given an id and X's strings are looked up once (an unknown token matches nothing), then the
// same trie counts. No gradient; on CUDA it runs on the host
// (an integer node without a device kernel: runtime/cuda/context.cc placement).
#include <algorithm>
#include <map>
#include <memory>

#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// A pool n-gram prefix: `column` >= 0 where a pool n-gram ends here.
struct TrieNode {
  int64_t column = -1;
  std::map<int64_t, std::unique_ptr<TrieNode>> next;
};

class TfIdfKernel : public OpKernel {
 public:
  explicit TfIdfKernel(const Node& n) {
    auto bad = [&](const std::string& why) { throw Error(cat(n.describe(), ": ", why)); };
    std::vector<int64_t> pool = n.attr_ints("pool_int64s");
    if (const Attribute* a = n.attr("pool_strings"); a && !a->strings.empty()) {
      if (!pool.empty()) bad("has both pool_strings and pool_int64s (one pool only)");
      // String tokens: each distinct pool string gets an id, the pool becomes those ids, and X's
      // strings are looked up (a string outside the pool is id -1, which no n-gram holds).
      for (const std::string& w : a->strings) {
        pool.push_back(
            vocabulary_.emplace(w, static_cast<int64_t>(vocabulary_.size())).first->second);
      }
    }
    min_n_ = n.attr_int("min_gram_length", 0);
    max_n_ = n.attr_int("max_gram_length", 0);
    max_skip_ = n.attr_int("max_skip_count", 0);
    const std::string mode = n.attr_string("mode", "");
    if (mode == "TF")
      mode_ = Mode::TF;
    else if (mode == "IDF")
      mode_ = Mode::IDF;
    else if (mode == "TFIDF")
      mode_ = Mode::TFIDF;
    else
      bad(cat("mode must be \"TF\", \"IDF\" or \"TFIDF\", got \"", mode, "\""));
    if (min_n_ < 1 || max_n_ < min_n_)
      bad(cat("needs 1 <= min_gram_length <= max_gram_length, got ", min_n_, " and ", max_n_));
    if (max_skip_ < 0) bad(cat("max_skip_count must be >= 0, got ", max_skip_));
    const std::vector<int64_t> counts = n.attr_ints("ngram_counts");
    const std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
    weights_ = n.attr_floats("weights");
    if (pool.empty()) bad("pool_int64s and pool_strings are both empty (or missing)");
    const int64_t pool_size = static_cast<int64_t>(pool.size());
    // n-grams of length i+1 lie in [counts[i], counts[i+1]) (the last group up to the end).
    int64_t k = 0;  // the n-gram's number in pool order
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t len = static_cast<int64_t>(i) + 1;
      const int64_t begin = counts[i];
      const int64_t end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
      if (begin < 0 || end < begin || end > pool_size || (end - begin) % len)
        bad(cat("ngram_counts ", i, " (", len, "-grams) gives the pool range [", begin, ", ", end,
                "), which is not a whole number of ", len, "-grams inside the pool of ",
                pool_size));
      for (int64_t p = begin; p < end; p += len, ++k) {
        if (k >= static_cast<int64_t>(indexes.size()))
          bad(cat("ngram_indexes has ", indexes.size(), " entries, the pool has more n-grams"));
        if (indexes[k] < 0) bad(cat("ngram_indexes[", k, "] is negative (", indexes[k], ")"));
        TrieNode* t = &root_;
        for (int64_t j = 0; j < len; ++j) {
          auto& child = t->next[pool[p + j]];
          if (!child) child = std::make_unique<TrieNode>();
          t = child.get();
        }
        t->column = indexes[k];
        columns_ = std::max(columns_, indexes[k] + 1);
      }
    }
    if (k != static_cast<int64_t>(indexes.size()))
      bad(cat("ngram_indexes has ", indexes.size(), " entries, the pool holds ", k, " n-grams"));
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < columns_)
      bad(cat("weights has ", weights_.size(), " entries, the output has ", columns_, " columns"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const bool strings = !vocabulary_.empty();
    if (strings && x.dtype() != DType::String)
      ctx.fail(cat("the pool is pool_strings, so X must be string tokens, got ",
                   dtype_name(x.dtype())));
    if (!strings && x.dtype() != DType::I64 && x.dtype() != DType::I32)
      ctx.fail(cat("X must be int32 or int64 token ids (the pool is pool_int64s), got ",
                   dtype_name(x.dtype())));
    if (x.rank() != 1 && x.rank() != 2)
      ctx.fail(cat("X must be [C] or [N, C], got ", shape_str(x.shape())));
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, c = x.dim(-1);
    Tensor& y =
        ctx.allocate_output(0, DType::F32, x.rank() == 2 ? Shape{rows, columns_} : Shape{columns_});
    float* yp = y.data<float>();
    std::fill(yp, yp + y.numel(), 0.0f);
    // int32 widened once; strings looked up once
    const Tensor ids = strings ? string_ids(x) : cast_tensor(x, DType::I64);
    for (int64_t r = 0; r < rows; ++r) {
      float* out = yp + r * columns_;
      count_row(ids.data<int64_t>() + r * c, c, out);
      for (int64_t j = 0; j < columns_; ++j) {
        const float w = weights_.empty() ? 1.0f : weights_[j];
        if (mode_ == Mode::IDF)
          out[j] = out[j] > 0 ? w : 0.0f;
        else if (mode_ == Mode::TFIDF)
          out[j] *= w;
      }
    }
  }

 private:
  enum class Mode { TF, IDF, TFIDF };

  Tensor string_ids(const Tensor& x) const {
    Tensor ids(DType::I64, x.shape());
    const std::string* s = x.data<std::string>();
    int64_t* id = ids.data<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = vocabulary_.find(s[i]);
      id[i] = it == vocabulary_.end() ? -1 : it->second;
    }
    return ids;
  }

  void count_row(const int64_t* row, int64_t c, float* out) const {
    int64_t first_n = min_n_;
    for (int64_t d = 1; d <= max_skip_ + 1; ++d) {
      for (int64_t p = 0; p < c; ++p) {
        if (p + d * (first_n - 1) >= c) break;  // no n-gram of a counted length fits
        const TrieNode* t = &root_;
        for (int64_t len = 1, q = p; len <= max_n_ && q < c; ++len, q += d) {
          auto it = t->next.find(row[q]);
          if (it == t->next.end()) break;
          t = it->second.get();
          if (len >= first_n && t->column >= 0) out[t->column] += 1.0f;
        }
      }
      // 1-grams do not depend on the distance: counted once.
      if (first_n == 1 && ++first_n > max_n_) break;
    }
  }

  int64_t min_n_ = 0, max_n_ = 0, max_skip_ = 0, columns_ = 0;
  Mode mode_ = Mode::TF;
  std::vector<float> weights_;
  std::map<std::string, int64_t> vocabulary_;  // pool_strings' ids (empty for pool_int64s)
  TrieNode root_;
};

}  // namespace

void register_tfidf(KernelRegistry& r) {
  r.add(OpId::TfIdfVectorizer, Device::CPU, {DType::I64, DType::I32, DType::String},
        kernel_factory<TfIdfKernel>());
}

}  // namespace oat::cpu
