#include "runtime/cuda/register.h"

#include "runtime/cuda/device.h"

namespace oat::cuda {

void register_kernels(KernelRegistry& r) {
  register_elementwise(r);
  register_matmul(r);
  register_shape(r);
  register_dropout(r);
  register_random(r);
  register_movement(r);
  register_pad(r);
  register_resize(r);
  register_softmax(r);
  register_reduce(r);
  register_conv(r);
  register_conv_transpose(r);
  register_pool(r);
  register_batch_norm(r);
  register_optimizer(r);
  register_grad_activation(r);
  register_grad_reduce(r);
  register_grad_matmul(r);
  register_grad_pool(r);
  register_grad_movement(r);
  register_loss(r);
  register_layer_norm(r);
  register_topk(r);
  register_lp_norm(r);
  register_quantize(r);
  register_roi_align(r);
  register_signal(r);
  register_index_ops(r);
  register_scatter_reduce(r);
}

}  // namespace oat::cuda
