// TODO(training issue): this family's gradient builders are not written yet.
#include "train/autodiff/register.h"

namespace oat::train {

void register_activation_gradients(GradientRegistry& /*r*/) {}

}  // namespace oat::train
