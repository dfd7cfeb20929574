// The CPU CUDA emulator itself (runtime/cuda/emulator/), in the emulated build only: what the rest
// of tests/cuda relies on when it runs there — block barriers and warp shuffles mean what they mean
// on a GPU, launch configurations and copies are checked as the CUDA runtime checks them, graph
// capture records instead of running and enforces the capture rules, and cuBLAS computes the
// column-major product it documents.
#include <doctest/doctest.h>

#ifdef OAT_CUDA_EMULATED

#include <cublas_v2.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "runtime/cuda/emulator/device.h"
#include "runtime/cuda/emulator/stream.h"

namespace {

// Block sum through shared memory and shuffles, as runtime/cuda/kernels/block_reduce.cuh does.
void block_sum_kernel(const float* x, float* out, int n) {
  __shared__ float partial[32];
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[blockIdx.x * n + i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w) s += partial[w];
    out[blockIdx.x] = s;
  }
}

void scale_kernel(float* x, float a, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= a;
}

void skipped_barrier_kernel(int* out) {
  if (threadIdx.x == 0) return;  // thread 0 leaves; the others still meet at the barrier
  __syncthreads();
  out[threadIdx.x] = 1;
}

void overflow_kernel(float* x, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i <= n) x[i] = 1.f;  // one element too many
}

// Runs `f` in a child process; returns its stderr and whether it died of SIGABRT.
template <class F>
std::pair<std::string, bool> in_child(F f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    f();
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {err, WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT};
}

template <class T>
T* device_copy(const std::vector<T>& h) {
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, h.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return static_cast<T*>(d);
}

template <class T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> h(n);
  REQUIRE(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
}

}  // namespace

TEST_CASE("emulator: block barriers and warp shuffles reduce a block as on a GPU") {
  const int rows = 3, n = 1000;
  std::vector<float> x(rows * n);
  for (int i = 0; i < rows * n; ++i) x[i] = static_cast<float>(i % 7);
  float* dx = device_copy(x);
  float* dout = device_copy(std::vector<float>(rows, -1.f));
  for (unsigned threads : {32u, 96u, 256u}) {
    oat_emu::Launch(rows, threads)(block_sum_kernel, dx, dout, n);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto out = host_copy(dout, rows);
    for (int r = 0; r < rows; ++r) {
      double want = 0;
      for (int i = 0; i < n; ++i) want += x[r * n + i];
      CHECK(out[r] == doctest::Approx(want));
    }
  }
  // Threads that return before a barrier do not hold it closed.
  int* flags = device_copy(std::vector<int>(64, 0));
  oat_emu::Launch(1, 64)(skipped_barrier_kernel, flags);
  const auto f = host_copy(flags, 64);
  CHECK(f[0] == 0);
  CHECK(f[63] == 1);
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(flags);
}

TEST_CASE("emulator: launch configurations and copies are checked as the CUDA runtime does") {
  float* d = device_copy(std::vector<float>(8, 1.f));
  oat_emu::Launch(1, 2048)(scale_kernel, d, 2.f, int64_t{8});
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);  // launch errors are not sticky
  oat_emu::Launch(dim3(1, 70000), 32)(scale_kernel, d, 2.f, int64_t{8});
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  std::vector<float> h(8);
  // Direction must match where the pointers live; a range must stay inside its allocation.
  CHECK(cudaMemcpy(h.data(), d, 32, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h.data(), d, 36, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  cudaGetLastError();
  // Fresh device memory is NaN, not zero, so reading what nobody wrote shows.
  void* fresh = nullptr;
  REQUIRE(cudaMalloc(&fresh, 16) == cudaSuccess);
  const auto f = host_copy(static_cast<float*>(fresh), 4);
  CHECK(std::isnan(f[0]));
  cudaFree(fresh);
  cudaFree(d);
}

TEST_CASE("emulator: a write past a buffer's end, or a host read of device memory, stops the run") {
  auto [err, aborted] = in_child([] {
    float* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), 10 * sizeof(float));
    oat_emu::Launch(1, 64).named("overflow_kernel")(overflow_kernel, d, int64_t{10});
  });
  CHECK(aborted);
  CHECK(err.find("overflow_kernel wrote past the end of a 40-byte device buffer") !=
        std::string::npos);
  auto [err2, aborted2] = in_child([] {
    float* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), 16);
    oat_emu::install_fault_handler();  // doctest installed its own
    volatile float v = d[0];  // a device pointer dereferenced on the host
    (void)v;
  });
  CHECK_FALSE(aborted2);  // SIGSEGV, re-raised
  CHECK(err2.find("host code touched device memory") != std::string::npos);
}

TEST_CASE("emulator: a full-mask shuffle in a partial warp is an error (undefined on a GPU)") {
  auto [err, aborted] = in_child([] {
    float* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), 48 * sizeof(float));
    oat_emu::Launch(2, 48).named("block_sum_kernel")(block_sum_kernel, d, d, 1);
  });
  CHECK(aborted);
  CHECK(err.find("block_sum_kernel: a warp shuffle's mask names lane 16 of warp 1, which does "
                 "not exist") != std::string::npos);
}

TEST_CASE("emulator: a capture records work, replays it, and refuses synchronisation") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  float* d = device_copy(std::vector<float>{1.f, 2.f});
  std::vector<float> h{0.f, 0.f};
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  oat_emu::Launch(1, 32, 0, s)(scale_kernel, d, 3.f, int64_t{2});
  REQUIRE(cudaMemcpyAsync(h.data(), d, 8, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(h[0] == 0.f);  // recorded, not run
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  cudaGraphExec_t e = nullptr;
  REQUIRE(cudaGraphInstantiate(&e, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(e, s) == cudaSuccess);
  CHECK(h == std::vector<float>{3.f, 6.f});
  REQUIRE(cudaGraphLaunch(e, s) == cudaSuccess);
  CHECK(h == std::vector<float>{9.f, 18.f});
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);

  // Synchronising the capturing stream invalidates the capture.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  // cudaMalloc is refused while a global-mode capture runs.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  cudaFree(d);
  cudaStreamDestroy(s);
}

TEST_CASE("emulator: cublasGemmStridedBatchedEx is the column-major product cuBLAS documents") {
  // A 2×3 (lda 2), B 3×2 (ldb 3), C = A·B 2×2, and with A transposed storage (3×2, lda 3).
  const std::vector<float> a{1, 4, 2, 5, 3, 6};  // columns of [[1,2,3],[4,5,6]]
  const std::vector<float> b{1, 0, 2, 0, 1, 1};  // columns of [[1,0],[0,1],[2,1]]
  float* da = device_copy(a);
  float* db = device_copy(b);
  float* dc = device_copy(std::vector<float>(4, 100.f));
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.f, zero = 0.f, half = 0.5f;
  REQUIRE(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 2,
                                     0, db, CUDA_R_32F, 3, 0, &zero, dc, CUDA_R_32F, 2, 0, 1,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(host_copy(dc, 4) == std::vector<float>{7, 16, 5, 11});
  // beta accumulates: C = 1·(AᵀᵀB) + 0.5·C, with Aᵀ stored (the same A read as 3×2 transposed).
  const std::vector<float> at{1, 2, 3, 4, 5, 6};  // columns of Aᵀ = [[1,4],[2,5],[3,6]]
  float* dat = device_copy(at);
  REQUIRE(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, dat, CUDA_R_32F,
                                     3, 0, db, CUDA_R_32F, 3, 0, &half, dc, CUDA_R_32F, 2, 0, 1,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(host_copy(dc, 4) == std::vector<float>{10.5f, 24, 7.5f, 16.5f});
  // Leading dimensions below the rows are refused; mixed F32/F16 operands are not supported.
  CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 1,
                                   0, db, CUDA_R_32F, 3, 0, &zero, dc, CUDA_R_32F, 2, 0, 1,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 2,
                                   0, db, CUDA_R_16F, 3, 0, &zero, dc, CUDA_R_32F, 2, 0, 1,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  cublasDestroy(h);
  for (float* p : {da, db, dc, dat}) cudaFree(p);
}

#endif  // OAT_CUDA_EMULATED
