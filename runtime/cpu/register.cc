#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_kernels(KernelRegistry& r) {
  register_binary(r);
  register_unary(r);
  register_activation(r);
  register_compare(r);
  register_matmul(r);
  register_conv(r);
  register_pool(r);
  register_norm(r);
  register_softmax(r);
  register_reduce(r);
  register_shape(r);
  register_movement(r);
  register_generator(r);
  register_control_flow(r);
  register_quantize(r);
  // detection and data-dependent selection
  register_nms(r);
  register_roi_align(r);
  register_max_unpool(r);
  register_selection(r);
  register_det(r);
  register_bitshift(r);
  register_tfidf(r);
  register_string_normalizer(r);
  register_ml_features(r);
  register_ml_encoders(r);
  register_ml_linear(r);
  register_ml_svm(r);
  register_ml_trees(r);
  register_ml_maps(r);
  register_random(r);
  // signal processing (opset 17)
  register_signal_window(r);
  register_dft(r);
  register_sequence(r);
  register_rnn_sequence(r);
  register_grad_reduce(r);
  register_grad_activation(r);
  register_grad_loss(r);
  register_grad_matmul(r);
  register_grad_conv(r);
  register_grad_norm(r);
  register_grad_movement(r);
  register_scatter_reduce(r);
  register_optimizer(r);
}

}  // namespace oat::cpu
