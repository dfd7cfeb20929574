// The packed elementwise loops (runtime/cuda/kernels/vector_map.cuh): 16-byte packs where every
// pointer is aligned, the n % V elements after the last pack, and the plain loop the same kernels
// take for pointers that are not aligned (one element into an allocation). Each launcher is
// called directly on device buffers, for lengths around the pack widths (F32: 4, F16: 8), with
// and without an offset, and compared with the formula on the host. Values are small integers,
// exact in every float type, so the comparison is exact.
#include <doctest/doctest.h>

#include <iostream>

#ifdef OAT_HAVE_CUDA
#include <cuda_runtime.h>

#include "runtime/cuda/device.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/grad_activation_impl.h"
#include "runtime/tensor.h"

using namespace oat;
using cuda::ElemType;

namespace {

// A device copy of `v` in dtype dt, placed `offset` elements into its allocation.
struct DeviceArray {
  Tensor storage;
  char* ptr = nullptr;
  DType dt;
  int64_t n;
  DeviceArray(const std::vector<float>& v, DType dtype, int64_t offset) : dt(dtype) {
    n = static_cast<int64_t>(v.size());
    storage = Tensor(dt, {n + offset}, Device::CUDA);
    ptr = static_cast<char*>(storage.raw_data()) + offset * dtype_size(dt);
    const Tensor host = cast_tensor(Tensor::from_vector<float>({n}, v), dt);
    cuda::copy_bytes(ptr, true, host.raw_data(), false, host.nbytes());
  }
  DeviceArray(DType dtype, int64_t count, int64_t offset) : dt(dtype), n(count) {
    storage = Tensor(dt, {n + offset}, Device::CUDA);
    ptr = static_cast<char*>(storage.raw_data()) + offset * dtype_size(dt);
  }
  std::vector<float> read() const {
    Tensor host(dt, {n});
    cuda::copy_bytes(host.raw_data(), false, ptr, true, host.nbytes());
    return host.to_float_vector();
  }
};

ElemType elem(DType dt) { return static_cast<ElemType>(static_cast<int>(dt)); }

std::vector<float> values(int64_t n, int salt) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + salt) % 13 - 6);
  return v;
}

}  // namespace

TEST_CASE("packed elementwise kernels: aligned packs, the tail, and offset pointers") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  const cudaStream_t s = nullptr;
  int runs = 0;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t n : {1, 3, 4, 7, 8, 9, 17, 100, 1029})
      for (int64_t offset : {0, 1}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(n);
        CAPTURE(offset);
        const std::vector<float> a = values(n, 1), b = values(n, 5);
        const DeviceArray da(a, dt, offset), db(b, dt, offset);
        DeviceArray y(dt, n, offset);

        cuda::launch_unary(cuda::UnaryOp::Scale, elem(dt), da.ptr, y.ptr, n, -2.f, 0.f, s);
        std::vector<float> got = y.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == -2.f * a[i]);

        // Sub over whole operands, then with each side a single element.
        cuda::BroadcastIndex whole;
        whole.contiguous = true;
        cuda::launch_binary(cuda::BinaryOp::Sub, elem(dt), da.ptr, db.ptr, y.ptr, n, whole, s);
        got = y.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == a[i] - b[i]);
        if (n > 1) {
          cuda::BroadcastIndex sb;  // b[0] against every a[i]
          sb.rank = 1;
          sb.dims[0] = n;
          sb.strides[0][0] = 1;
          sb.strides[1][0] = 0;
          cuda::BroadcastIndex sa = sb;  // a[0] against every b[i]
          sa.strides[0][0] = 0;
          sa.strides[1][0] = 1;
          cuda::launch_binary(cuda::BinaryOp::Sub, elem(dt), da.ptr, db.ptr, y.ptr, n, sb, s);
          got = y.read();
          for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == a[i] - b[0]);
          cuda::launch_binary(cuda::BinaryOp::Sub, elem(dt), da.ptr, db.ptr, y.ptr, n, sa, s);
          got = y.read();
          for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == a[0] - b[i]);
        }

        // ReluGrad: dX = dY where Y > 0, else 0.
        cuda::launch_activation_grad(cuda::ActGrad::Relu, elem(dt), db.ptr, da.ptr, y.ptr, n, 0.f,
                                     0.f, s);
        got = y.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == (a[i] > 0.f ? b[i] : 0.f));

        // DropoutGrad: dX = dY · mask · 2, the mask a bool array at the same offset.
        std::vector<float> keep(n);
        for (int64_t i = 0; i < n; ++i) keep[i] = a[i] > -2.f ? 1.f : 0.f;
        const DeviceArray mask(keep, DType::Bool, offset);
        cuda::launch_masked_scale(elem(dt), db.ptr, reinterpret_cast<const bool*>(mask.ptr), y.ptr,
                                  n, 2.f, s);
        got = y.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == (keep[i] != 0.f ? 2.f * b[i] : 0.f));

        // Cast to F32 (another pack width: 16 bytes of floats) and back.
        DeviceArray wide(DType::F32, n, offset);
        cuda::launch_cast(elem(dt), ElemType::F32, da.ptr, wide.ptr, n, s);
        got = wide.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == a[i]);
        cuda::launch_cast(ElemType::F32, elem(dt), wide.ptr, y.ptr, n, s);
        got = y.read();
        for (int64_t i = 0; i < n; ++i) REQUIRE(got[i] == a[i]);
        ++runs;
      }
  CHECK(runs == 3 * 9 * 2);
}

#else
TEST_CASE("packed elementwise kernels: not built (no CUDA backend in this build)") {
  std::cout << "SKIPPED: this build has no CUDA backend (OAT_CUDA off)\n";
}
#endif
