#include "runtime/cuda/kernels/cudnn_desc.h"

namespace oat::cuda {

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw Error(cat("cuDNN: no kernels for dtype ", dtype_name(t)));
}

std::vector<int> cudnn_dims(const Shape& shape) {
  std::vector<int> d;
  for (int64_t v : shape) d.push_back(static_cast<int>(v));
  while (d.size() < 4) d.insert(d.begin() + 2, 1);
  return d;
}

void TensorDesc::set(DType t, const Shape& shape) {
  const std::vector<int> dims = cudnn_dims(shape);
  std::vector<int> strides(dims.size());
  int s = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= dims[i];
  }
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(d_, cudnn_type(t), static_cast<int>(dims.size()),
                                         dims.data(), strides.data()));
}

void FilterDesc::set(DType t, const Shape& shape) {
  const std::vector<int> dims = cudnn_dims(shape);
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(d_, cudnn_type(t), CUDNN_TENSOR_NCHW,
                                         static_cast<int>(dims.size()), dims.data()));
}

}  // namespace oat::cuda
