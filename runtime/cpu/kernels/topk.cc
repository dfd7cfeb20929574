// TopK (opsets 1, 10, 11; operand rules in topk_args.h): along `axis`, the k largest (largest = 1)
// or smallest (largest = 0) elements of each lane of X, as Values (X's dtype) and Indices (int64),
// X's shape with k on the axis.
//
// Order: by value, and on equal values the lower index first (ONNX's rule, also ONNX Runtime's).
// NaN counts as larger than every number (PyTorch's topk, numpy's sort): it comes first when
// largest = 1 and last when largest = 0 (ONNX is silent; ONNX Runtime 1.31's order with NaN
// depends on where it sits: [1, NaN, 3, -2], k = 2 gives [1, NaN]). -0.0 and +0.0 are equal (a
// tie, decided by the index, as in ONNX Runtime).
// sorted = 0 leaves the order unspecified in ONNX; the outputs are then sorted anyway (ONNX's
// reference implementation does the same).
//
// Each lane is a partial sort of its indices (O(len log k)); a lane with inner > 1 is first copied
// out of its strided positions. F16/BF16 run on FP32 copies (in_fp32): widening keeps every order
// and tie, so the values and indices are exact.
//
// The gradient is GatherElementsGrad(dValues, shape(X), Indices) along the same axis
// (train/autodiff/grads/reduce.cc).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/topk_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// a ranks strictly above b in "largest first" order (NaN above everything).
template <class T>
bool greater(T a, T b) {
  if (is_nan(a)) return !is_nan(b);
  return !is_nan(b) && a > b;
}

template <class T>
class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const TopKArgs a = topk_args(ctx, x.shape(), ctx.input_or_null(1));
    T* values = ctx.allocate_output(0, x.dtype(), a.out_shape).template data<T>();
    Tensor unnamed;  // Indices when the node lists only Values (ONNX requires both)
    int64_t* indices = (ctx.num_outputs() > 1 ? ctx.allocate_output(1, DType::I64, a.out_shape)
                                              : (unnamed = Tensor(DType::I64, a.out_shape)))
                           .template data<int64_t>();
    const int64_t lanes = a.outer * a.inner, len = a.len, inner = a.inner, k = a.k;
    if (lanes == 0 || k == 0) return;
    const T* xp = x.data<T>();
    const bool largest = a.largest;
    parallel_chunks(lanes, x.numel() >= kElementwiseParallelMin, [&](int64_t begin, int64_t end) {
      std::vector<T> lane(inner == 1 ? 0 : static_cast<size_t>(len));
      std::vector<int64_t> order(static_cast<size_t>(len));
      for (int64_t l = begin; l < end; ++l) {
        const int64_t o = l / inner, i = l % inner;
        const T* src = xp + o * len * inner + i;
        const T* v = src;
        if (inner != 1) {
          for (int64_t j = 0; j < len; ++j) lane[j] = src[j * inner];
          v = lane.data();
        }
        std::iota(order.begin(), order.end(), int64_t{0});
        auto before = [&](int64_t p, int64_t q) {
          if (largest ? greater(v[p], v[q]) : greater(v[q], v[p])) return true;
          if (largest ? greater(v[q], v[p]) : greater(v[p], v[q])) return false;
          return p < q;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        const int64_t out = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          values[out + j * inner] = v[order[j]];
          indices[out + j * inner] = order[j];
        }
      }
    });
  }
};

}  // namespace

void register_topk(KernelRegistry& r) {
  r.add(OpId::TopK, Device::CPU, DType::F32, kernel_factory<TopKKernel<float>>());
  r.add(OpId::TopK, Device::CPU, kLowFloats, in_fp32(kernel_factory<TopKKernel<float>>()));
  r.add(OpId::TopK, Device::CPU, DType::F64, kernel_factory<TopKKernel<double>>());
  r.add(OpId::TopK, Device::CPU, DType::I32, kernel_factory<TopKKernel<int32_t>>());
  r.add(OpId::TopK, Device::CPU, DType::I64, kernel_factory<TopKKernel<int64_t>>());
}

}  // namespace oat::cpu
