#include "runtime/cuda/kernels/common.h"

#include "runtime/cpu/broadcast.h"

namespace oat::cuda {

static_assert(static_cast<int>(ElemType::Bool) == static_cast<int>(DType::Bool) &&
                  static_cast<int>(ElemType::F16) == static_cast<int>(DType::F16) &&
                  static_cast<int>(ElemType::I64) == static_cast<int>(DType::I64),
              "ElemType must follow DType's order");

void require_cuda_rank(const KernelContext& ctx, size_t rank) {
  if (rank > static_cast<size_t>(kMaxRank))
    ctx.fail(cat("rank ", rank, " is above the CUDA kernels' ", kMaxRank));
}

Shape shape_input(const KernelContext& ctx, int i) {
  Shape s = host_input(ctx, i).to_int_vector();
  for (int64_t d : s)
    if (d < 0) ctx.fail(cat("input shape ", shape_str(s), " has a negative dimension"));
  return s;
}

BroadcastIndex make_strided_index(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                                  const char* what) {
  const size_t nops = strides.size();
  if (nops > 3) throw Error(cat(what, ": at most 3 operands"));
  // Keep dimensions of size > 1, then merge d into the next kept one when, for every operand,
  // stride[d] == stride[next] * dims[next] (the pair walks memory as one dimension).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(nops);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    dims.push_back(out[d]);
    for (size_t k = 0; k < nops; ++k) st[k].push_back(strides[k][d]);
  }
  std::vector<int64_t> mdims;
  std::vector<std::vector<int64_t>> mst(nops);
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    bool merge = !mdims.empty();
    for (size_t k = 0; merge && k < nops; ++k)
      merge = st[k][d] == mst[k].back() * mdims.back();
    if (merge) {
      mdims.back() *= dims[d];
    } else {
      mdims.push_back(dims[d]);
      for (size_t k = 0; k < nops; ++k) mst[k].push_back(st[k][d]);
    }
  }
  // mdims is innermost-first; BroadcastIndex is outermost-first.
  BroadcastIndex ix;
  if (mdims.size() > static_cast<size_t>(kMaxRank))
    throw Error(cat(what, " of ", nops, " operands over ", shape_str(out), " needs ", mdims.size(),
                    " dimensions after merging; the CUDA kernels take ", kMaxRank));
  ix.rank = static_cast<int>(mdims.size());
  bool contiguous = true;
  for (int d = 0; d < ix.rank; ++d) {
    const size_t src = mdims.size() - 1 - d;
    ix.dims[d] = mdims[src];
    for (size_t k = 0; k < nops; ++k) ix.strides[k][d] = mst[k][src];
  }
  for (size_t k = 0; k < nops; ++k)
    contiguous = contiguous && (ix.rank == 0 || (ix.rank == 1 && ix.strides[k][0] == 1));
  if (ix.rank == 0) contiguous = numel(out) <= 1;
  ix.contiguous = contiguous;
  finish_index(ix, static_cast<int>(nops));
  return ix;
}

BroadcastIndex make_broadcast_index(const Shape& out, const std::vector<Shape>& ins) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape& s : ins) strides.push_back(cpu::broadcast_strides(s, out));
  return make_strided_index(out, strides, "broadcast");
}

void finish_index(BroadcastIndex& ix, int nops) {
  constexpr int64_t kMax = INT32_MAX;
  ix.index32 = ix.rank > 0;
  int64_t n = 1;
  for (int d = 0; d < ix.rank && ix.index32; ++d) {
    if (ix.dims[d] < 1 || ix.dims[d] > kMax) ix.index32 = false;  // empty, or too long a dim
    else n *= ix.dims[d];
    if (n > kMax) ix.index32 = false;
  }
  // Every partial sum of an operand's offset is bounded by Σ_d (dims[d] − 1)·|strides[k][d]|.
  for (int k = 0; k < nops && ix.index32; ++k) {
    int64_t span = 0;
    for (int d = 0; d < ix.rank && ix.index32; ++d) {
      const int64_t s = ix.strides[k][d] < 0 ? -ix.strides[k][d] : ix.strides[k][d];
      if (s > kMax) ix.index32 = false;
      else span += (ix.dims[d] - 1) * s;
      if (span > kMax) ix.index32 = false;
    }
  }
  for (int d = 0; d < kMaxRank; ++d)
    ix.divs[d] = ix.index32 && d < ix.rank ? IndexDivider(static_cast<uint32_t>(ix.dims[d]))
                                           : IndexDivider();
}

}  // namespace oat::cuda
