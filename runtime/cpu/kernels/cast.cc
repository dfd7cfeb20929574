// Cast and CastLike: Y = X converted to 'to' (Cast) or to input 1's dtype (CastLike), with
// oat::cast_tensor's semantics: float->int truncates toward zero, anything->bool is x != 0,
// ->F16/BF16 rounds to nearest even, a cast to the same dtype shares X's storage.
//
// Casts between floating types are the ones mixed precision inserts at every F16/F32 boundary,
// so they get their own loops, split over threads:
//   F32 -> F16   F16C vcvtps2ph (round to nearest even, as Eigen::half(float))
//   F16 -> F32   F16C vcvtph2ps (exact)
//   F32 -> BF16  bits + 0x7fff + lsb, >> 16 (round to nearest even, as Eigen::bfloat16(float))
//   BF16 -> F32  bits << 16 (exact)
//   F64 -> F16/BF16  one rounding of the double (half_from_double: round-to-odd float first)
//   others       through float, as cast_tensor: To(float(x)), or static_cast for F32<->F64
// They agree with cast_tensor bit for bit on every non-NaN value (NaN stays NaN; the payload may
// differ), which generator_test.cc checks over all 16-bit high halves. Registered from
// register_generator().
#include <type_traits>

#include "runtime/cpu/kernels/cast_args.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

bool is_float_type(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

template <class From, class To>
void convert(const From* src, To* dst, int64_t n) {
  constexpr bool kToLow = std::is_same_v<To, Eigen::half> || std::is_same_v<To, Eigen::bfloat16>;
  constexpr bool kFromLow =
      std::is_same_v<From, Eigen::half> || std::is_same_v<From, Eigen::bfloat16>;
  if constexpr (std::is_same_v<From, float> && kToLow) {
    round_from_float(src, dst, n);
  } else if constexpr (kFromLow && std::is_same_v<To, float>) {
    widen_to_float(src, dst, n);
  } else if constexpr (std::is_same_v<From, double> && std::is_same_v<To, Eigen::half>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = half_from_double(src[i]);
  } else if constexpr (std::is_same_v<From, double> && std::is_same_v<To, Eigen::bfloat16>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16_from_double(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kToLow) {
        dst[i] = To(static_cast<float>(src[i]));  // F16 <-> BF16: exact widening, one rounding
      } else {
        dst[i] = static_cast<To>(src[i]);
      }
    }
  }
}

Tensor cast_to(const Tensor& x, DType to) {
  if (x.dtype() == to || !is_float_type(x.dtype()) || !is_float_type(to)) return cast_tensor(x, to);
  Tensor y(to, x.shape());
  const int64_t n = x.numel();
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_dtype(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!std::is_integral_v<From> && !std::is_integral_v<To>) {  // bool is integral
        const From* src = x.data<From>();
        To* dst = y.data<To>();
        parallel_chunks(n, n * static_cast<int64_t>(sizeof(To)) >= kParallelBytes,
                        [&](int64_t b, int64_t e) { convert(src + b, dst + b, e - b); });
      }
    });
  });
  return y;
}

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(const Node& n) : to_(cast_target(n)) {}
  void compute(KernelContext& ctx) override { ctx.set_output(0, cast_to(ctx.input(0), to_)); }

 private:
  DType to_;
};

void cast_like(KernelContext& ctx) {
  ctx.set_output(0, cast_to(ctx.input(0), ctx.input(1).dtype()));
}

}  // namespace

void register_cast(KernelRegistry& r) {
  r.add(OpId::Cast, Device::CPU, kAnyDType, kernel_factory<CastKernel>());
  r.add(OpId::CastLike, Device::CPU, kAnyDType, function_kernel(cast_like));
}

}  // namespace oat::cpu
