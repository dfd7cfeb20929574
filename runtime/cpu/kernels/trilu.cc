// Trilu (opset 14): the upper or lower triangle of each matrix in the last two dims of X
// [..., N, M], everything else zero; k (optional int64 scalar input 1, default 0) shifts the
// diagonal (k > 0 above the main one, k < 0 below):
//   upper = 1 (default): Y[..., i, j] = j - i >= k ? X[..., i, j] : 0
//   upper = 0:           Y[..., i, j] = j - i <= k ? X[..., i, j] : 0
// Each row is one kept run and one zeroed run of bytes, so every dtype takes the same path (the
// all-zero word is 0, +0.0 and false alike). Also the gradient: dX = Trilu(dY) with the same k.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/kernels/trilu_k.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class TriluKernel : public OpKernel {
 public:
  explicit TriluKernel(const Node& n) : upper_(n.attr_int("upper", 1) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int64_t k = trilu_k(ctx, ctx.input_or_null(1), x.shape());
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    const int64_t rows_n = x.dim(-2), cols = x.dim(-1), rows = x.numel() / cols;
    const size_t es = dtype_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
    const bool upper = upper_;
    parallel_chunks(rows, x.nbytes() >= kParallelBytes, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % rows_n;
        // Kept columns: [lo, hi) clamped to [0, cols).
        const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        const size_t row = static_cast<size_t>(r * cols) * es;
        std::memset(dst + row, 0, static_cast<size_t>(lo) * es);
        if (hi > lo)
          std::memcpy(dst + row + lo * es, src + row + lo * es, static_cast<size_t>(hi - lo) * es);
        std::memset(dst + row + std::max(hi, lo) * es, 0,
                    static_cast<size_t>(cols - std::max(hi, lo)) * es);
      }
    });
  }

 private:
  bool upper_;
};

}  // namespace

void register_trilu(KernelRegistry& r) {
  r.add(OpId::Trilu, Device::CPU, kAnyDType, kernel_factory<TriluKernel>());
}

}  // namespace oat::cpu
