// BitShift (opset 11): Z = X << Y (direction = "LEFT") or X >> Y ("RIGHT"), elementwise with numpy
// broadcasting, on unsigned integers. The runtime stores uint8 of ONNX's uint8/16/32/64, so that
// is the one dtype registered (the uint16/32/64 cases are skipped, as every op's). The shift is
// done on the value widened to 32 bits, then truncated to 8 (C's integer promotion, ONNX
// Runtime's result): a shift of 8 or more gives 0. Integer op: no gradient flows through it.
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/bitshift_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const Node& n) : left_(bitshift_left(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    const Shape out = bitshift_output_shape(ctx, x, y);
    Tensor& z = ctx.allocate_output(0, DType::U8, out);
    const std::vector<std::vector<int64_t>> strides = {
        contiguous_strides(out), broadcast_strides(x.shape(), out),
        broadcast_strides(y.shape(), out)};
    const uint8_t* xp = x.data<uint8_t>();
    const uint8_t* yp = y.data<uint8_t>();
    uint8_t* zp = z.data<uint8_t>();
    const bool left = left_;
    for_each_broadcast_run(out, strides, [&](const std::vector<int64_t>& o,
                                             const std::vector<int64_t>& s, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        const uint32_t a = xp[o[1] + k * s[1]], b = yp[o[2] + k * s[2]];
        zp[o[0] + k] = static_cast<uint8_t>(b >= 32 ? 0u : (left ? a << b : a >> b));
      }
    });
  }

 private:
  bool left_ = true;
};

}  // namespace

void register_bitshift(KernelRegistry& r) {
  r.add(OpId::BitShift, Device::CPU, DType::U8, kernel_factory<BitShiftKernel>());
}

}  // namespace oat::cpu
