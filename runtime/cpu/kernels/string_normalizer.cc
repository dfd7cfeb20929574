// StringNormalizer (opset 10): X [C] or [1, C] string -> Y [C'] or [1, C'].
//
//   Y = [case_change(x) for x in X if not stopword(x)]
//   stopword(x) = x in stopwords                  (is_case_sensitive = 1)
//               = lower(x) in lower(stopwords)    (is_case_sensitive = 0, the default)
//   case_change_action: "LOWER", "UPPER" or "NONE" (the default)
// When every element is a stopword, Y is one empty string: [1] for [C], [1, 1] for [1, C] (the
// spec). Strings are UTF-8; case is changed per code point with towlower_l / towupper_l in the
// `locale` attribute's locale when this machine has it, else in C.UTF-8 (glibc's full Unicode
// simple case mapping, what en_US gives too); a machine with neither maps ASCII only. Invalid
// UTF-8 is an error naming the element. No gradient (strings); on CUDA it runs on the host.
#include <locale.h>

#include <clocale>
#include <cwctype>
#include <set>

#include "runtime/cpu/register.h"
#include "runtime/utf8.h"

namespace oat::cpu {

namespace {

enum class CaseChange { None, Lower, Upper };

class StringNormalizerKernel : public OpKernel {
 public:
  explicit StringNormalizerKernel(const Node& n) : node_(n.describe()) {
    const std::string action = n.attr_string("case_change_action", "NONE");
    if (action == "LOWER")
      action_ = CaseChange::Lower;
    else if (action == "UPPER")
      action_ = CaseChange::Upper;
    else if (action != "NONE")
      throw Error(cat(node_,
                      ": case_change_action must be \"LOWER\", \"UPPER\" or \"NONE\", got \"",
                      action, "\""));
    case_sensitive_ = n.attr_int("is_case_sensitive", 0) != 0;
    const std::string locale = n.attr_string("locale", "");
    for (const char* name : {locale.c_str(), "C.UTF-8", "C.utf8", "en_US.UTF-8"}) {
      if (!*name) continue;
      locale_ = newlocale(LC_CTYPE_MASK, name, static_cast<locale_t>(nullptr));
      if (locale_) break;
    }
    if (const Attribute* a = n.attr("stopwords"))
      for (const std::string& w : a->strings)
        stopwords_.insert(case_sensitive_ ? w : changed(w, CaseChange::Lower, "stopword"));
  }
  ~StringNormalizerKernel() override {
    if (locale_) freelocale(locale_);
  }
  StringNormalizerKernel(const StringNormalizerKernel&) = delete;
  StringNormalizerKernel& operator=(const StringNormalizerKernel&) = delete;

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::String) ctx.fail(cat("X must be a string tensor, got ", x.describe()));
    const bool two_d = x.rank() == 2;
    if (!(x.rank() == 1 || (two_d && x.dim(0) == 1)))
      ctx.fail(cat("X must have shape [C] or [1, C], got ", shape_str(x.shape())));
    const std::string* in = x.data<std::string>();
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string what = cat("element ", i);
      if (!stopwords_.empty() &&
          stopwords_.count(case_sensitive_ ? in[i] : changed(in[i], CaseChange::Lower, what)))
        continue;
      kept.push_back(action_ == CaseChange::None ? in[i] : changed(in[i], action_, what));
    }
    if (kept.empty()) kept.emplace_back();  // one empty string, as the spec says
    const int64_t c = static_cast<int64_t>(kept.size());
    Tensor& y = ctx.allocate_output(0, DType::String, two_d ? Shape{1, c} : Shape{c});
    std::move(kept.begin(), kept.end(), y.data<std::string>());
  }

 private:
  // s with its case changed code point by code point.
  std::string changed(const std::string& s, CaseChange to, const std::string& what) const {
    std::u32string cps;
    if (!decode_utf8(s, &cps)) throw Error(cat(node_, ": ", what, " is not valid UTF-8"));
    for (char32_t& c : cps) {
      if (locale_) {
        const wint_t w = static_cast<wint_t>(c);
        c = static_cast<char32_t>(to == CaseChange::Lower ? towlower_l(w, locale_)
                                                          : towupper_l(w, locale_));
      } else if (c < 0x80) {
        if (to == CaseChange::Lower && c >= 'A' && c <= 'Z') c += 'a' - 'A';
        if (to == CaseChange::Upper && c >= 'a' && c <= 'z') c -= 'a' - 'A';
      }
    }
    std::string r;
    encode_utf8(cps, &r);
    return r;
  }

  std::string node_;
  CaseChange action_ = CaseChange::None;
  bool case_sensitive_ = false;
  locale_t locale_ = static_cast<locale_t>(nullptr);
  std::set<std::string> stopwords_;
};

}  // namespace

void register_string_normalizer(KernelRegistry& r) {
  r.add(OpId::StringNormalizer, Device::CPU, DType::String,
        kernel_factory<StringNormalizerKernel>());
}

}  // namespace oat::cpu
