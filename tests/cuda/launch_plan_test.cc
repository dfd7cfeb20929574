// Host-side planning of the CUDA kernels that needs no device: how broadcasting operands are
// indexed (dimension dropping and merging), and which inputs an op reads on the host. Built
// with the CUDA backend only (these functions live in it); elsewhere the file says so.
#include <doctest/doctest.h>

#include <random>

#ifdef OAT_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/kernels/batch_norm_impl.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cpu/kernels/prelu_slope.h"
#include "runtime/cuda/kernels/slice_view.h"

using namespace oat;
using oat::cuda::BroadcastIndex;
using oat::cuda::make_broadcast_index;

namespace {

// Operand k's offset for output element i: the device kernels' own function (launch.h).
int64_t offset(const BroadcastIndex& ix, int k, int64_t i) {
  int64_t off[3];
  oat::cuda::broadcast_offsets<3>(ix, i, off);
  return off[k];
}

// The same with plain 64-bit '/' and '%' over the index's dims and strides.
int64_t plain_offset(const BroadcastIndex& ix, int k, int64_t i) {
  if (ix.contiguous) return i;
  int64_t off = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    off += (i % ix.dims[d]) * ix.strides[k][d];
    i /= ix.dims[d];
  }
  return off;
}

// The offsets a plain (unmerged) numpy broadcast gives.
int64_t reference_offset(const Shape& out, const Shape& in, int64_t i) {
  const int r = static_cast<int>(out.size()), ri = static_cast<int>(in.size());
  int64_t off = 0, stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    const int64_t idx = i % out[d];
    i /= out[d];
    const int di = d - (r - ri);
    if (di < 0) continue;
    if (in[di] != 1) off += idx * stride;
    stride *= in[di];
  }
  return off;
}

}  // namespace

TEST_CASE("broadcast indexing merges dimensions and matches numpy offsets") {
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{2, 3, 4}, {{2, 3, 4}, {3, 1}}},
      {{2, 3, 4}, {{2, 3, 4}, {2, 3, 4}}},
      {{5, 1, 7}, {{1}, {5, 1, 7}}},
      {{2, 3, 4, 5}, {{3, 1, 1}, {2, 3, 4, 5}, {5}}},
      {{6, 1, 2, 1, 3}, {{6, 1, 1, 1, 3}, {2, 1, 1}}},
      {{}, {{}, {}}},
      {{4, 0, 3}, {{4, 1, 3}, {3}}},
  };
  for (const auto& [out, ins] : cases) {
    CAPTURE(shape_str(out));
    const BroadcastIndex ix = make_broadcast_index(out, ins);
    CHECK(ix.rank <= static_cast<int>(out.size()));
    for (int64_t i = 0; i < numel(out); ++i)
      for (size_t k = 0; k < ins.size(); ++k) {
        CAPTURE(k);
        CHECK(offset(ix, static_cast<int>(k), i) == reference_offset(out, ins[k], i));
      }
  }
  // Small shapes index in 32 bits.
  CHECK(make_broadcast_index({2, 3, 4}, {{2, 3, 4}, {3, 1}}).index32);
  // Same shapes collapse to one contiguous run; a scalar operand does not.
  CHECK(make_broadcast_index({2, 3, 4}, {{2, 3, 4}, {2, 3, 4}}).contiguous);
  const BroadcastIndex s = make_broadcast_index({2, 3, 4}, {{2, 3, 4}, {1}});
  CHECK_FALSE(s.contiguous);
  CHECK(s.rank == 1);
  CHECK(s.strides[1][0] == 0);
}

TEST_CASE("IndexDivider: n / d by multiply and shift equals the division for n, d below 2^31") {
  using oat::cuda::IndexDivider;
  std::mt19937_64 rng(7);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4100; ++d) divisors.push_back(d);
  for (int e = 12; e <= 31; ++e) {  // powers of two and their neighbours up to 2^31 - 1
    const uint32_t p = e == 31 ? 0x7fffffffu : (1u << e);
    for (uint32_t d : {p - 1, p, p + 1}) divisors.push_back(d);
  }
  for (int r = 0; r < 2000; ++r) divisors.push_back(1 + static_cast<uint32_t>(rng() % 0x7fffffffu));
  int64_t checked = 0, wrong = 0;
  for (uint32_t d : divisors) {
    if (d == 0 || d > 0x7fffffffu) continue;
    const IndexDivider div(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, 0x7fffffffu, 0x7ffffffeu};
    for (uint32_t m : {2u, 3u, 1000u, 65537u}) {  // around multiples of d
      const uint64_t q = static_cast<uint64_t>(d) * m;
      if (q + 1 <= 0x7fffffffu) ns.insert(ns.end(), {uint32_t(q - 1), uint32_t(q), uint32_t(q + 1)});
    }
    for (int r = 0; r < 64; ++r) ns.push_back(static_cast<uint32_t>(rng() % 0x80000000u));
    for (uint32_t n : ns) {
      ++checked;
      if (div.div(n) != n / d) {
        ++wrong;
        if (wrong < 5) FAIL_CHECK("IndexDivider(" << d << ").div(" << n << ") = " << div.div(n));
      }
    }
  }
  CHECK(wrong == 0);
  CHECK(checked > 400000);
}

TEST_CASE("32-bit broadcast indexing gives the 64-bit offsets; large shapes stay 64-bit") {
  using oat::cuda::make_strided_index;
  // A transpose [2,5,3,7] -> [2,3,5,7] (strides of the input's dims in output order), a
  // reversed slice (negative strides), a broadcast bias over [6, 1000, 13].
  struct StridedCase {
    Shape out;
    std::vector<std::vector<int64_t>> strides;
  };
  const std::vector<StridedCase> cases = {
      {{2, 3, 5, 7}, {{105, 7, 21, 1}}},
      {{4, 6}, {{-6, -1}}},
      {{6, 1000, 13}, {{13000, 13, 1}, {0, 1, 0}, {0, 0, 1}}},
      {{3, 1, 4, 1, 5}, {{20, 20, 5, 5, 1}, {0, 0, 1, 1, 0}}},
  };
  for (const auto& c : cases) {
    CAPTURE(shape_str(c.out));
    const BroadcastIndex ix = make_strided_index(c.out, c.strides, "test");
    REQUIRE(ix.index32);
    BroadcastIndex wide = ix;
    wide.index32 = false;
    for (int64_t i = 0; i < numel(c.out); ++i)
      for (size_t k = 0; k < c.strides.size(); ++k) {
        CAPTURE(i);
        CHECK(offset(ix, static_cast<int>(k), i) == plain_offset(ix, static_cast<int>(k), i));
        CHECK(offset(wide, static_cast<int>(k), i) == plain_offset(ix, static_cast<int>(k), i));
      }
  }
  // The transpose keeps 4 dims (nothing contiguous across them); a slice of whole rows merges.
  CHECK(make_strided_index({2, 3, 5, 7}, {{105, 7, 21, 1}}, "test").rank == 4);
  CHECK(make_strided_index({4, 6}, {{6, 1}}, "test").contiguous);
  // 2^31 elements, or an operand reaching 2^31 elements in, index in 64 bits.
  CHECK_FALSE(make_broadcast_index({1 << 16, 1 << 15}, {{1 << 16, 1 << 15}, {1 << 15}}).index32);
  CHECK(make_broadcast_index({1 << 16, (1 << 15) - 1}, {{1 << 16, (1 << 15) - 1}, {1}}).index32);
  CHECK_FALSE(make_strided_index({2, 3}, {{int64_t{1} << 31, 1}}, "test").index32);
  CHECK_FALSE(make_strided_index({3, 2}, {{-(int64_t{1} << 30), 1}}, "test").index32);
  // 64-bit offsets beyond 2^31 are computed exactly.
  const BroadcastIndex big = make_strided_index({3, 2}, {{int64_t{1} << 32, 1}}, "test");
  CHECK(offset(big, 0, 5) == (int64_t{2} << 32) + 1);
}

TEST_CASE("inputs read on the host: shapes, axes, scalars; never data, lr, step or the skip flag") {
  using oat::cuda::reads_on_host;
  CHECK(reads_on_host(OpId::Reshape, 1));
  CHECK_FALSE(reads_on_host(OpId::Reshape, 0));
  CHECK(reads_on_host(OpId::Slice, 3));
  CHECK(reads_on_host(OpId::Clip, 2));
  // lr, Adam's step and the skip flag are read on the device (a CUDA graph replays new values)
  CHECK_FALSE(reads_on_host(OpId::SGDUpdate, 3));
  CHECK_FALSE(reads_on_host(OpId::SGDUpdate, 4));
  CHECK_FALSE(reads_on_host(OpId::AdamUpdate, 4));
  CHECK_FALSE(reads_on_host(OpId::AdamUpdate, 5));
  CHECK_FALSE(reads_on_host(OpId::UnscaleAndCheck, 0));
  CHECK_FALSE(reads_on_host(OpId::MatMul, 1));
  CHECK(reads_on_host(OpId::SoftmaxCrossEntropyLoss, 1));  // targets are range-checked there
}
TEST_CASE("PRelu's slope: per channel before opset 7 (legacy), numpy broadcasting after") {
  using oat::cpu::prelu_slope_view;
  // Legacy: a [C] slope on [N, C, H, W] lines up with axis 1, not with W.
  CHECK(prelu_slope_view({2, 3, 4, 5}, {3}, true) == Shape{3, 1, 1});
  CHECK(prelu_slope_view({2, 3}, {3}, true) == Shape{3});
  // Not legacy, or a slope that is not [C]: the slope's own shape.
  CHECK(prelu_slope_view({2, 3, 4, 5}, {3}, false) == Shape{3});
  CHECK(prelu_slope_view({2, 3, 4, 5}, {5}, true) == Shape{5});
  CHECK(prelu_slope_view({2, 1, 4, 5}, {1}, true) == Shape{1});
  CHECK(prelu_slope_view({3}, {3}, true) == Shape{3});
  CHECK(prelu_slope_view({2, 3, 4}, {3, 1, 1}, true) == Shape{3, 1, 1});
}

TEST_CASE("row copies: 1-D when contiguous or one row, 2-D within the device's pitch, else per row") {
  using oat::cuda::plan_row_copies;
  using oat::cuda::RowCopy;
  auto same = [](const RowCopy& c, int64_t dst, int64_t src, int64_t width, int64_t rows) {
    return c.dst_offset == dst && c.src_offset == src && c.width == width && c.rows == rows;
  };
  CHECK(plan_row_copies(8, 8, 0, 5).empty());
  CHECK(plan_row_copies(8, 8, 8, 0).empty());
  // Concat along axis 0 (one row): one 1-D copy, whatever the pitch (may exceed 2 GiB).
  auto p = plan_row_copies(int64_t{3} << 31, int64_t{1} << 31, int64_t{1} << 31, 1);
  REQUIRE(p.size() == 1);
  CHECK(same(p[0], 0, 0, int64_t{1} << 31, 1));
  // Contiguous on both sides: the rows are one block.
  p = plan_row_copies(16, 16, 16, 4);
  REQUIRE(p.size() == 1);
  CHECK(same(p[0], 0, 0, 64, 1));
  // A strided side within the maximum pitch: one 2-D copy.
  p = plan_row_copies(48, 16, 16, 4);
  REQUIRE(p.size() == 1);
  CHECK(same(p[0], 0, 0, 16, 4));
  // A pitch above the maximum: one 1-D copy per row at the pitches' offsets.
  p = plan_row_copies(48, 16, 16, 3, /*max_pitch=*/32);
  REQUIRE(p.size() == 3);
  for (int64_t r = 0; r < 3; ++r) CHECK(same(p[r], 48 * r, 16 * r, 16, 1));
  p = plan_row_copies(16, int64_t{3} << 30, 16, 2);  // Split of a > 2 GiB-wide row
  REQUIRE(p.size() == 2);
  CHECK(same(p[1], 16, int64_t{3} << 30, 16, 1));
}
TEST_CASE("BatchNorm reductions: chunks cover each channel; merged partials give the statistics") {
  using oat::cuda::bn_split;
  using oat::cuda::ChannelShape;
  // Few channels with many elements get many blocks each; every element in exactly one chunk.
  for (const ChannelShape sh : {ChannelShape{0, 4, 1}, ChannelShape{1, 4, 100},
                                ChannelShape{32, 64, 112 * 112}, ChannelShape{1000, 3, 1000000}}) {
    const int64_t m = sh.N * sh.S;
    const auto sp = bn_split(sh);
    CAPTURE(m);
    CHECK(sp.splits >= 1);
    CHECK(sp.splits <= oat::cuda::kBnMaxSplits);
    CHECK(sp.splits * sp.chunk >= m);
    CHECK((sp.splits - 1) * sp.chunk < std::max<int64_t>(m, 1));
    CHECK(oat::cuda::bn_partial_floats(sh) == 2 * sh.C * sp.splits);
  }
  CHECK(bn_split(ChannelShape{32, 64, 112 * 112}).splits == 49);  // 401408 elements, 8192 each
  // The merge of per-chunk (count, mean, M2) equals the two-pass statistics of the whole.
  std::vector<double> x;
  for (int i = 0; i < 1000; ++i) x.push_back(100.0 + std::sin(0.37 * i) * (1 + i % 7));
  double ref_mu = 0, ref_m2 = 0;
  for (double v : x) ref_mu += v;
  ref_mu /= x.size();
  for (double v : x) ref_m2 += (v - ref_mu) * (v - ref_mu);
  for (size_t chunk : {1u, 7u, 128u, 999u, 1000u}) {
    double n = 0, mu = 0, m2 = 0;
    for (size_t lo = 0; lo < x.size(); lo += chunk) {
      const size_t hi = std::min(x.size(), lo + chunk);
      double mb = 0, m2b = 0;
      for (size_t k = lo; k < hi; ++k) mb += x[k];
      mb /= static_cast<double>(hi - lo);
      for (size_t k = lo; k < hi; ++k) m2b += (x[k] - mb) * (x[k] - mb);
      oat::cuda::bn_merge_stats(n, mu, m2, static_cast<double>(hi - lo), mb, m2b);
    }
    CAPTURE(chunk);
    CHECK(n == 1000.0);
    CHECK(mu == doctest::Approx(ref_mu).epsilon(1e-12));
    CHECK(m2 == doctest::Approx(ref_m2).epsilon(1e-10));
  }
  double n = 5, mu = 2, m2 = 3;  // an empty block changes nothing
  oat::cuda::bn_merge_stats(n, mu, m2, 0, 123, 456);
  CHECK(n == 5);
  CHECK(mu == 2);
  CHECK(m2 == 3);
}

namespace {

// Every (output, term) offset of a schedule's plan, as the kernels' decompose computes it.
std::vector<int64_t> all_offsets(const oat::cuda::ReducePlan& p) {
  auto dec = [](int64_t i, int rank, const int64_t* dims, const int64_t* strides) {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return off;
  };
  std::vector<int64_t> v;
  for (int64_t o = 0; o < p.outputs; ++o)
    for (int64_t r = 0; r < p.count; ++r)
      v.push_back(dec(o, p.kept_rank, p.kept_dims, p.kept_strides) +
                  dec(r, p.red_rank, p.red_dims, p.red_strides));
  return v;
}

}  // namespace

TEST_CASE("reductions: merged dims address the same elements; columns, rows and splits") {
  using oat::cuda::reduce_plan;
  using oat::cuda::ReduceOp;
  using oat::cuda::schedule_reduce;
  // Merging never changes which element an (output, term) pair reads.
  const std::vector<std::pair<Shape, std::vector<bool>>> cases = {
      {{2, 3, 4, 5}, {true, true, false, false}},  {{2, 3, 4, 5}, {false, true, true, false}},
      {{2, 3, 4, 5}, {true, false, true, false}},  {{2, 1, 4, 5}, {false, true, false, true}},
      {{6, 7}, {true, true}},                      {{6, 7}, {false, false}}};
  for (const auto& [xs, red] : cases) {
    CAPTURE(shape_str(xs));
    const auto p = reduce_plan(xs, red);
    const auto sc = schedule_reduce(ReduceOp::Sum, p);
    CHECK(sc.plan.outputs == p.outputs);
    CHECK(sc.plan.count == p.count);
    CHECK(all_offsets(sc.plan) == all_offsets(p));
  }
  // [N, S, D] summed over N and S (a bias gradient): one reduced dim of N·S, D contiguous
  // outputs read by columns, split over the rows (8 tiles of 32 columns alone are 8 blocks).
  auto sc = schedule_reduce(ReduceOp::Sum, reduce_plan({64, 128, 256}, {true, true, false}));
  CHECK(sc.plan.red_rank == 1);
  CHECK(sc.plan.red_dims[0] == 64 * 128);
  CHECK(sc.columns);
  CHECK(sc.splits == 128);  // 1024 target blocks / 8 tiles
  CHECK(sc.splits * sc.chunk >= 64 * 128);
  CHECK(sc.scratch_floats() == sc.splits * 256);
  // A conv bias's dB ([N, C, H, W] over N, H, W): rows (H·W contiguous), 64 outputs split.
  sc = schedule_reduce(ReduceOp::Sum, reduce_plan({32, 64, 56, 56}, {true, false, true, true}));
  CHECK_FALSE(sc.columns);
  CHECK(sc.plan.red_rank == 2);
  CHECK(sc.splits == 16);  // ceil(1024 / 64)
  CHECK(sc.chunk >= 4096);
  // A scalar sum of 4113 terms: too short for two chunks of 4096 — one block, no scratch.
  sc = schedule_reduce(ReduceOp::Sum, reduce_plan({4113}, {true}));
  CHECK(sc.splits == 1);
  CHECK(sc.scratch_floats() == 0);
  // A scalar sum of 10^6 terms: 244 chunks of at least 4096, every term in exactly one.
  sc = schedule_reduce(ReduceOp::SumSquare, reduce_plan({1000, 1000}, {true, true}));
  CHECK(sc.splits == 244);
  CHECK(sc.chunk >= 4096);
  CHECK(sc.splits * sc.chunk >= 1000000);
  CHECK((sc.splits - 1) * sc.chunk < 1000000);
  // Many outputs: no split; LogSumExp: never split, never columns (its shift is per output).
  CHECK(schedule_reduce(ReduceOp::Sum, reduce_plan({4096, 64}, {false, true})).splits == 1);
  sc = schedule_reduce(ReduceOp::LogSumExp, reduce_plan({8192, 16}, {true, false}));
  CHECK_FALSE(sc.columns);
  CHECK(sc.splits == 1);
  // The split itself: never more than 65535 chunks, none empty, none below min_chunk.
  for (const auto& [base, count] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 0}, {1, 127}, {1, 128}, {3, 1000}, {1, int64_t{1} << 40}, {2000, 100000}}) {
    const auto s = oat::cuda::split_reduction(base, count, 64);
    CAPTURE(base);
    CAPTURE(count);
    CHECK(s.splits >= 1);
    CHECK(s.splits <= 65535);
    CHECK(s.splits * s.chunk >= count);
    if (s.splits > 1) {
      CHECK((s.splits - 1) * s.chunk < count);
      CHECK(s.chunk >= 64);
    }
  }
}

#else
TEST_CASE("CUDA launch planning") { MESSAGE("SKIPPED: this build has no CUDA backend"); }
#endif
