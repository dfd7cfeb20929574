#include "runtime/composite/expanders.h"

namespace oat::composite {

std::map<std::string, Expander> builtin_expanders() {
  std::map<std::string, Expander> t;
  // Each family adds its op types here.
  t["Einsum"] = expand_einsum;
  t["LRN"] = expand_lrn;
  t["MeanVarianceNormalization"] = expand_mean_variance_normalization;
  t["RNN"] = expand_rnn;
  t["GRU"] = expand_gru;
  t["LSTM"] = expand_lstm;
  return t;
}

}  // namespace oat::composite
