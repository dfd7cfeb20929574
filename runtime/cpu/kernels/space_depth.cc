// DepthToSpace and SpaceToDepth: pure data movement between channels and b x b spatial blocks.
//
// DepthToSpace, X (N, C, H, W) -> Y (N, C / b², H·b, W·b):
//   DCR (default):  Y[n, c, h·b + i, w·b + j] = X[n, (i·b + j)·(C / b²) + c, h, w]
//   CRD:            Y[n, c, h·b + i, w·b + j] = X[n, c·b² + i·b + j, h, w]
// SpaceToDepth, X (N, C, H, W) -> Y (N, C·b², H / b, W / b), the inverse of DCR:
//   Y[n, (i·b + j)·C + c, h, w] = X[n, c, h·b + i, w·b + j]
// Elements are moved as opaque words of the dtype's size, so one kernel serves every dtype.
#include <string>

#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

// Calls f(U{}) with U an unsigned integer of `bytes` bytes.
template <class F>
void dispatch_word(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      throw Error(cat("DepthToSpace/SpaceToDepth: unsupported element size ", bytes));
  }
}

class SpaceDepthKernel : public OpKernel {
 public:
  explicit SpaceDepthKernel(const Node& node)
      : to_space_(node.op == OpId::DepthToSpace), block_(node.attr_int("blocksize", 0)) {
    const std::string mode = node.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      throw Error(cat(node.describe(), ": unknown mode '", mode, "' (expected DCR or CRD)"));
    crd_ = mode == "CRD";
  }

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    const int64_t b = block_;
    if (b < 1) ctx.fail(cat("blocksize must be >= 1, got ", b));
    if (X.rank() != 4) ctx.fail(cat("X must be (N, C, H, W), got ", shape_str(X.shape())));
    const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3);
    if (to_space_ && C % (b * b) != 0)
      ctx.fail(cat("channels of X ", shape_str(X.shape()),
                   " are not divisible by blocksize² = ", b * b));
    if (!to_space_ && (H % b != 0 || W % b != 0))
      ctx.fail(
          cat("spatial dims of X ", shape_str(X.shape()), " are not divisible by blocksize ", b));
    const Shape y_shape =
        to_space_ ? Shape{N, C / (b * b), H * b, W * b} : Shape{N, C * b * b, H / b, W / b};
    Tensor& Y = ctx.allocate_output(0, X.dtype(), y_shape);
    if (Y.numel() == 0) return;
    dispatch_word(dtype_size(X.dtype()), [&](auto word) {
      using U = decltype(word);
      const U* x = static_cast<const U*>(X.raw_data());
      U* y = static_cast<U*>(Y.raw_data());
      if (to_space_)
        depth_to_space(x, y, N, C, H, W);
      else
        space_to_depth(x, y, N, C, H, W);
    });
  }

 private:
  template <class U>
  void depth_to_space(const U* x, U* y, int64_t N, int64_t C, int64_t H, int64_t W) const {
    const int64_t b = block_, Cb = C / (b * b);
#pragma omp parallel for collapse(2) schedule(static) if (N * C * H * W > (1 << 16))
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Cb; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < b; ++i) {
            U* yr = y + ((n * Cb + c) * H * b + h * b + i) * W * b;
            for (int64_t j = 0; j < b; ++j) {
              const int64_t ch = crd_ ? c * b * b + i * b + j : (i * b + j) * Cb + c;
              const U* xr = x + ((n * C + ch) * H + h) * W;
              for (int64_t w = 0; w < W; ++w) yr[w * b + j] = xr[w];
            }
          }
  }

  template <class U>
  void space_to_depth(const U* x, U* y, int64_t N, int64_t C, int64_t H, int64_t W) const {
    const int64_t b = block_, Ho = H / b, Wo = W / b;
#pragma omp parallel for collapse(2) schedule(static) if (N * C * H * W > (1 << 16))
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < b; ++i)
          for (int64_t j = 0; j < b; ++j) {
            const int64_t ch = (i * b + j) * C + c;
            for (int64_t h = 0; h < Ho; ++h) {
              const U* xr = x + ((n * C + c) * H + h * b + i) * W + j;
              U* yr = y + ((n * C * b * b + ch) * Ho + h) * Wo;
              for (int64_t w = 0; w < Wo; ++w) yr[w] = xr[w * b];
            }
          }
  }

  bool to_space_;
  int64_t block_;
  bool crd_ = false;
};

}  // namespace

void register_space_depth(KernelRegistry& r) {
  // The kernel moves words of the element's size, so every dtype takes the same path.
  const auto dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64,
                       DType::I32, DType::I8,  DType::U8,  DType::Bool};
  r.add(OpId::DepthToSpace, Device::CPU, dtypes, kernel_factory<SpaceDepthKernel>());
  r.add(OpId::SpaceToDepth, Device::CPU, dtypes, kernel_factory<SpaceDepthKernel>());
}

}  // namespace oat::cpu
