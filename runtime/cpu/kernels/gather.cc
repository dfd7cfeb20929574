// Gather and GatherElements (indices of any integer dtype; negative indices count from the end).
//
// Gather (axis a, data rank r, indices rank q):
//   Y[i_0..i_(a-1), j_0..j_(q-1), k_(a+1)..] = X[i_0..i_(a-1), idx[j], k_(a+1)..]
//   viewed as X[outer, n, inner]: each (outer, j) pair is one memcpy of `inner` elements.
// GatherElements (indices have X's rank; Y has the indices' shape):
//   Y[i_0, .., i_(r-1)] = X[i_0, .., idx[i_0, .., i_(r-1)] (at position a), .., i_(r-1)]
// Indices are validated before the copy so no error is thrown from inside a parallel loop.
// Registered from register_movement().
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/movement.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class GatherKernel : public OpKernel {
 public:
  explicit GatherKernel(const Node& n) : axis_(n.attr_int("axis", 0)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    if (x.rank() == 0) ctx.fail("cannot gather from a scalar");
    const int axis = normalize_axis(ctx, axis_, x.rank());
    const int64_t n = x.shape()[axis];
    const std::vector<int64_t> idx = wrapped_indices(ctx, ind, n, x.shape(), axis);
    Shape out(x.shape().begin(), x.shape().begin() + axis);
    out.insert(out.end(), ind.shape().begin(), ind.shape().end());
    out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    const int64_t m = static_cast<int64_t>(idx.size());
    const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
    parallel_chunks(outer * m, static_cast<int64_t>(y.nbytes()) >= kParallelBytes,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t u = begin; u < end; ++u) {
                        const int64_t o = u / m, j = u % m;
                        std::memcpy(dst + u * block, src + (o * n + idx[j]) * block, block);
                      }
                    });
  }

 private:
  int64_t axis_;
};

class GatherElementsKernel : public OpKernel {
 public:
  explicit GatherElementsKernel(const Node& n) : axis_(n.attr_int("axis", 0)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int r = x.rank();
    const int axis = elements_axis(ctx, x.shape(), ind.shape(), axis_);
    const std::vector<int64_t> idx = wrapped_indices(ctx, ind, x.shape()[axis], x.shape(), axis);
    Tensor& y = ctx.allocate_output(0, x.dtype(), ind.shape());
    if (y.numel() == 0) return;
    const std::vector<int64_t> st = contiguous_strides(x.shape());
    const Shape& out = ind.shape();
    const int64_t inner = out[r - 1], axis_st = st[axis];
    const bool last = axis == r - 1;
    // Offsets of each row start with the gathered axis contributing 0; the index adds idx*stride.
    std::vector<int64_t> row_st = st;
    row_st[axis] = 0;
    dispatch_word(dtype_size(x.dtype()), [&](auto w) {
      using W = decltype(w);
      const W* src = static_cast<const W*>(x.raw_data());
      W* dst = static_cast<W*>(y.raw_data());
      for_each_row(out, row_st, 0, static_cast<int64_t>(y.nbytes()), [&](int64_t row, int64_t off) {
        W* d = dst + row * inner;
        const int64_t* ix = idx.data() + row * inner;
        if (last) {
          for (int64_t j = 0; j < inner; ++j) d[j] = src[off + ix[j]];
        } else {
          for (int64_t j = 0; j < inner; ++j) d[j] = src[off + j + ix[j] * axis_st];
        }
      });
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather(KernelRegistry& r) {
  r.add(OpId::Gather, Device::CPU, kAnyDType, kernel_factory<GatherKernel>());
  r.add(OpId::GatherElements, Device::CPU, kAnyDType, kernel_factory<GatherElementsKernel>());
}

}  // namespace oat::cpu
