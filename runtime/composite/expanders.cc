#include "runtime/composite/expanders.h"

namespace oat::composite {

std::map<std::string, Expander> builtin_expanders() {
  std::map<std::string, Expander> t;
  // Each family adds its op types here.
  t["Einsum"] = expand_einsum;
  t["LRN"] = expand_lrn;
  t["MeanVarianceNormalization"] = expand_mean_variance_normalization;
  t["GroupNormalization"] = expand_group_normalization;
  t["RNN"] = expand_rnn;
  t["GRU"] = expand_gru;
  t["LSTM"] = expand_lstm;
  t["OneHot"] = expand_one_hot;
  t["EyeLike"] = expand_eye_like;
  t["GatherND"] = expand_gather_nd;
  t["ScatterElements"] = expand_scatter_elements;
  t["Scatter"] = expand_scatter_elements;
  t["ScatterND"] = expand_scatter_nd;
  t["ReverseSequence"] = expand_reverse_sequence;
  t["GridSample"] = expand_grid_sample;
  // Ops of other domains are keyed "<domain>.<op type>".
  t["ai.onnx.preview.training.Adagrad"] = expand_adagrad;
  t["ai.onnx.preview.training.Momentum"] = expand_momentum;
  t["ai.onnx.preview.training.Adam"] = expand_adam;
  return t;
}

}  // namespace oat::composite
