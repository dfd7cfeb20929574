#include "train/autodiff/register.h"

namespace oat::train {

void register_gradients(GradientRegistry& r) {
  register_elementwise_gradients(r);
  register_activation_gradients(r);
  register_matmul_gradients(r);
  register_conv_gradients(r);
  register_norm_gradients(r);
  register_loss_gradients(r);
  register_reduce_gradients(r);
  register_shape_gradients(r);
  register_quantize_gradients(r);
  register_signal_gradients(r);
}

}  // namespace oat::train
