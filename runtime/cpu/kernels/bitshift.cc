// BitShift (opset 11): Z = X << Y (direction = "LEFT") or X >> Y ("RIGHT"), elementwise with numpy
// broadcasting, on unsigned integers (uint8, uint16, uint32, uint64). The shift is done on the
// value widened to 64 bits, then truncated to X's width: a shift by the width or more gives 0
// (ONNX Runtime's result for uint8, whose C promotion to int gives the same; for uint64, where C
// leaves a shift by 64 undefined, 0 too). Integer op: no gradient flows through it.
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/bitshift_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

template <class T>
class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const Node& n) : left_(bitshift_left(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    const Shape out = bitshift_output_shape(ctx, x, y);
    Tensor& z = ctx.allocate_output(0, x.dtype(), out);
    const std::vector<std::vector<int64_t>> strides = {
        contiguous_strides(out), broadcast_strides(x.shape(), out),
        broadcast_strides(y.shape(), out)};
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* zp = z.data<T>();
    const bool left = left_;
    for_each_broadcast_run(out, strides, [&](const std::vector<int64_t>& o,
                                             const std::vector<int64_t>& s, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t a = xp[o[1] + k * s[1]], b = yp[o[2] + k * s[2]];
        zp[o[0] + k] = static_cast<T>(b >= 64 ? 0u : (left ? a << b : a >> b));
      }
    });
  }

 private:
  bool left_ = true;
};

}  // namespace

void register_bitshift(KernelRegistry& r) {
  r.add(OpId::BitShift, Device::CPU, DType::U8, kernel_factory<BitShiftKernel<uint8_t>>());
  r.add(OpId::BitShift, Device::CPU, DType::U16, kernel_factory<BitShiftKernel<uint16_t>>());
  r.add(OpId::BitShift, Device::CPU, DType::U32, kernel_factory<BitShiftKernel<uint32_t>>());
  r.add(OpId::BitShift, Device::CPU, DType::U64, kernel_factory<BitShiftKernel<uint64_t>>());
}

}  // namespace oat::cpu
