// The CUDA emulator's kernel execution: every thread of every block, on the CPU (launch.h).
//
// A block's threads are fibers (own stacks; a hand-written switch on x86-64, ucontext elsewhere)
// scheduled round-robin on the calling OS thread. A fiber
// runs until it finishes or blocks at a barrier:
//   __syncthreads():  opens when every live thread of the block is waiting at it;
//   a warp shuffle:   opens when every live lane of the warp is waiting at one; then every lane
//                     reads the value its source lane brought (all read before any moves on).
// A block whose live threads are all blocked but no barrier can open is a deadlock (e.g.
// __syncthreads inside a branch some threads skip): an error naming the kernel's configuration.
// If the first block reaches no barrier at all, the kernel has none and the other blocks' threads
// run as plain calls (much faster); a barrier reached in that mode is an error too.
#include <sys/mman.h>
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cuda/emulator/launch.h"
#include "runtime/cuda/emulator/stream.h"

namespace oat_emu {

thread_local ThreadIndex t_index;

namespace {

constexpr size_t kStackBytes = 256 * 1024;

// Switching between the scheduler and a fiber. swapcontext also saves and restores the signal
// mask, two system calls per switch: over half of the emulated suite's time. On x86-64 the switch
// is a few instructions instead: push what the SysV ABI says survives a call (rbp, rbx, r12-r15,
// the SSE and x87 control words), store the stack pointer, load the other one, pop. A fresh fiber's
// stack is laid out as if it had been switched away from just before entering fiber_entry. Other
// machines keep ucontext.
#if defined(__x86_64__)
extern "C" void oat_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .globl oat_emu_switch
  .type oat_emu_switch, @function
oat_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size oat_emu_switch, .-oat_emu_switch
  .section .note.GNU-stack, "", @progbits
  .text
)");

struct Context {
  void* sp = nullptr;
};

// `entry` runs on `stack` at the first switch to c; it must never return.
void context_init(Context& c, char* stack, size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<uint64_t*>(
      (reinterpret_cast<uintptr_t>(stack) + bytes) & ~static_cast<uintptr_t>(15));
  // From the top: a null return address for entry (so entry starts with rsp ≡ 8 mod 16, as after
  // a call), entry itself for `ret`, rbp rbx r12 r13 r14 r15 (zero), then MXCSR and the x87
  // control word at their power-on values.
  uint64_t* sp = top - 9;
  sp[8] = 0;
  sp[7] = reinterpret_cast<uint64_t>(entry);
  for (int i = 1; i <= 6; ++i) sp[i] = 0;
  sp[0] = 0x1F80u | (static_cast<uint64_t>(0x037Fu) << 32);
  c.sp = sp;
}
void context_switch(Context& from, Context& to) { oat_emu_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc{};
};
void context_init(Context& c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

enum class State { Ready, AtBarrier, AtShuffle, Done };

struct Fiber {
  Context ctx;
  char* stack = nullptr;
  State state = State::Ready;
  uint3 index{0, 0, 0};
  int linear = 0;
  // Barrier / shuffle operands and results.
  int predicate = 0, barrier_result = 0;
  uint64_t shuffle_in = 0, shuffle_out = 0;
  unsigned shuffle_mask = 0;
  int shuffle_kind = 0, shuffle_delta = 0, shuffle_width = 32;
};

struct BlockRun {
  std::vector<Fiber> fibers;
  Context scheduler;
  int current = -1;
  bool direct = false;  // threads run as plain calls: no barrier may be reached
  bool any_barrier = false;
  const std::function<void()>* body = nullptr;
  std::exception_ptr error;
};

thread_local BlockRun* t_run = nullptr;
thread_local const char* t_kernel = "a kernel";  // the running kernel's name, for messages

// The order threads and blocks are run in: forward by default; OAT_EMU_SCHEDULE=reverse runs
// both last to first. A GPU promises no order, so a kernel whose result depends on it (a thread
// reading what another writes without a barrier, a block reading another block's output) gives
// different results under the two; the emulated suite runs both ways.
bool reverse_schedule() {
  static const bool r = [] {
    const char* e = std::getenv("OAT_EMU_SCHEDULE");
    return e && std::string(e) == "reverse";
  }();
  return r;
}
int scheduled(int i, int n) { return reverse_schedule() ? n - 1 - i : i; }

[[noreturn]] void emulator_abort(const std::string& what) {
  std::fprintf(stderr, "CUDA emulator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

char* stack_of(size_t i) {
  static thread_local std::vector<char*> pool;
  while (pool.size() <= i) {
    void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) emulator_abort("cannot map a fiber stack");
    pool.push_back(static_cast<char*>(p));
  }
  return pool[i];
}

void switch_to_scheduler() {
  BlockRun& run = *t_run;
  Fiber& f = run.fibers[static_cast<size_t>(run.current)];
  context_switch(f.ctx, run.scheduler);
  t_run = &run;
}

// A fiber's first and only frame: the thread body, then back to the scheduler for good (a Done
// fiber is never resumed).
void fiber_main() {
  {
    BlockRun& run = *t_run;
    try {
      (*run.body)();
    } catch (...) {
      if (!run.error) run.error = std::current_exception();
    }
    run.fibers[static_cast<size_t>(run.current)].state = State::Done;
  }
  switch_to_scheduler();
  emulator_abort("a finished fiber was resumed");
}

uint3 unflatten(int i, dim3 b) {
  const unsigned u = static_cast<unsigned>(i);
  return uint3{u % b.x, (u / b.x) % b.y, u / (b.x * b.y)};
}

std::string config_text(dim3 g, dim3 b) {
  return "grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
         ") block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) +
         ")";
}

// Opens whatever barriers can open; false when none could (deadlock) while some wait.
bool release(BlockRun& run) {
  const int n = static_cast<int>(run.fibers.size());
  bool opened = false;
  for (int w = 0; w < n; w += 32) {
    const int end = std::min(n, w + 32);
    bool all = true, some = false;
    for (int t = w; t < end; ++t) {
      const State s = run.fibers[static_cast<size_t>(t)].state;
      if (s == State::AtShuffle) some = true;
      else if (s != State::Done) all = false;
    }
    if (!all || !some) continue;
    for (int t = w; t < end; ++t) {
      Fiber& f = run.fibers[static_cast<size_t>(t)];
      if (f.state != State::AtShuffle) continue;
      for (int l = 0; l < 32; ++l)
        if ((f.shuffle_mask >> l & 1u) &&
            (w + l >= end || run.fibers[static_cast<size_t>(w + l)].state != State::AtShuffle))
          emulator_abort(std::string(t_kernel) + ": a warp shuffle's mask names lane " +
                         std::to_string(l) + " of warp " + std::to_string(w / 32) +
                         (w + l >= end ? ", which does not exist (blockDim.x " +
                                             std::to_string(n) + " is not a multiple of 32)"
                                       : ", which has exited or is elsewhere"));
      const int lane = t - w, width = f.shuffle_width, seg = lane / width * width;
      int src = lane;
      switch (f.shuffle_kind) {
        case 0: src = lane + f.shuffle_delta; if (src >= seg + width) src = lane; break;
        case 1: src = lane - f.shuffle_delta; if (src < seg) src = lane; break;
        case 2: src = lane ^ f.shuffle_delta; if (src >= seg + width || src < seg) src = lane; break;
        default: src = seg + ((f.shuffle_delta % width) + width) % width; break;
      }
      const Fiber& from = src + w < end ? run.fibers[static_cast<size_t>(src + w)] : f;
      f.shuffle_out = from.state == State::AtShuffle ? from.shuffle_in : f.shuffle_in;
    }
    for (int t = w; t < end; ++t)
      if (run.fibers[static_cast<size_t>(t)].state == State::AtShuffle)
        run.fibers[static_cast<size_t>(t)].state = State::Ready;
    opened = true;
  }
  if (opened) return true;
  bool all = true, some = false;
  int any_pred = 0;
  for (const Fiber& f : run.fibers) {
    if (f.state == State::AtBarrier) {
      some = true;
      any_pred |= f.predicate;
    } else if (f.state != State::Done) {
      all = false;
    }
  }
  if (!all || !some) return false;
  for (Fiber& f : run.fibers)
    if (f.state == State::AtBarrier) {
      f.barrier_result = any_pred;
      f.state = State::Ready;
    }
  return true;
}

// Runs one block with fibers; returns whether any barrier was reached.
bool run_block_fibers(const std::function<void()>& body, dim3 grid, dim3 block, uint3 block_idx) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  BlockRun run;
  run.body = &body;
  run.fibers.resize(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    Fiber& f = run.fibers[static_cast<size_t>(t)];
    f.linear = t;
    f.index = unflatten(t, block);
    f.stack = stack_of(static_cast<size_t>(t));
    context_init(f.ctx, f.stack, kStackBytes, fiber_main);
  }
  BlockRun* outer = t_run;
  t_run = &run;
  t_index.block = block_idx;
  t_index.block_dim = block;
  t_index.grid_dim = grid;
  for (;;) {
    bool ran = false;
    for (int k = 0; k < n; ++k) {
      const int t = scheduled(k, n);
      Fiber& f = run.fibers[static_cast<size_t>(t)];
      if (f.state != State::Ready) continue;
      run.current = t;
      t_index.thread = f.index;
      context_switch(run.scheduler, f.ctx);
      t_run = &run;
      ran = true;
    }
    bool done = true;
    for (const Fiber& f : run.fibers) done = done && f.state == State::Done;
    if (done) break;
    if (!release(run) && !ran)
      emulator_abort(std::string("deadlock in ") + t_kernel + " with " + config_text(grid, block) +
                     " at block (" +
                     std::to_string(block_idx.x) + "," + std::to_string(block_idx.y) + "," +
                     std::to_string(block_idx.z) +
                     "): threads wait at a __syncthreads or shuffle that others never reach");
    if (!ran) continue;
  }
  t_run = outer;
  if (run.error) std::rethrow_exception(run.error);
  return run.any_barrier;
}

void execute(dim3 grid, dim3 block, const std::function<void()>& body) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  bool fibers = true;
  const int64_t blocks = static_cast<int64_t>(grid.x) * grid.y * grid.z;
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t lin = reverse_schedule() ? blocks - 1 - k : k;
    const uint3 b{static_cast<unsigned>(lin % grid.x),
                  static_cast<unsigned>(lin / grid.x % grid.y),
                  static_cast<unsigned>(lin / (static_cast<int64_t>(grid.x) * grid.y))};
    if (fibers) {
      fibers = run_block_fibers(body, grid, block, b);
      continue;
    }
    BlockRun direct;
    direct.direct = true;
    BlockRun* outer = t_run;
    t_run = &direct;
    t_index.block = b;
    t_index.block_dim = block;
    t_index.grid_dim = grid;
    for (int k2 = 0; k2 < n; ++k2) {
      t_index.thread = unflatten(scheduled(k2, n), block);
      body();
    }
    t_run = outer;
  }
}

}  // namespace

void check_vector_access(const void* p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0)
    emulator_abort(std::string(t_kernel ? t_kernel : "(no kernel)") + ": a " +
                   std::to_string(bytes) + "-byte vector access at " +
                   std::to_string(reinterpret_cast<uintptr_t>(p)) +
                   ", not a multiple of its size (misaligned address on a GPU)");
}

int block_barrier(int predicate) {
  BlockRun* run = t_run;
  if (!run) emulator_abort("__syncthreads called outside a kernel");
  if (run->direct)
    emulator_abort(std::string(t_kernel) +
                   ": __syncthreads reached in a block after the first block reached none");
  run->any_barrier = true;
  Fiber& f = run->fibers[static_cast<size_t>(run->current)];
  f.predicate = predicate;
  f.state = State::AtBarrier;
  switch_to_scheduler();
  return run->fibers[static_cast<size_t>(run->current)].barrier_result;
}

uint64_t warp_shuffle(unsigned mask, uint64_t bits, int kind, int delta, int width) {
  BlockRun* run = t_run;
  if (!run) emulator_abort("warp shuffle called outside a kernel");
  if (run->direct)
    emulator_abort(std::string(t_kernel) +
                   ": warp shuffle reached in a block after the first block reached none");
  if (width <= 0 || width > 32 || (width & (width - 1)))
    emulator_abort("warp shuffle width " + std::to_string(width) + " is not a power of 2 <= 32");
  run->any_barrier = true;
  Fiber& f = run->fibers[static_cast<size_t>(run->current)];
  f.shuffle_in = bits;
  f.shuffle_mask = mask;
  f.shuffle_kind = kind;
  f.shuffle_delta = delta;
  f.shuffle_width = width;
  f.state = State::AtShuffle;
  switch_to_scheduler();
  return run->fibers[static_cast<size_t>(run->current)].shuffle_out;
}

namespace {
std::mutex g_launch_mutex;
std::map<std::string, uint64_t> g_launches;  // by kernel name
}  // namespace

uint64_t kernel_launches(const char* part) {
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  uint64_t n = 0;
  for (const auto& [name, count] : g_launches)
    if (name.find(part) != std::string::npos) n += count;
  return n;
}

void launch_kernel(const char* name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   std::function<void()> body) {
  {
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    ++g_launches[name];
  }
  const unsigned long long threads =
      static_cast<unsigned long long>(block.x) * block.y * block.z;
  const bool bad = grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 ||
                   block.z == 0 || threads > 1024 || block.z > 64 || grid.x > 2147483647u ||
                   grid.y > 65535 || grid.z > 65535;
  if (bad) {
    record_error(cudaErrorInvalidConfiguration);
    return;
  }
  if (smem > 48 * 1024) {
    record_error(cudaErrorInvalidValue);
    return;
  }
  enqueue(stream, name, [name, grid, block, body = std::move(body)] {
    t_kernel = name;
    try {
      execute(grid, block, body);
    } catch (const std::exception& e) {
      emulator_abort(std::string(name) + " with " + config_text(grid, block) + " threw: " + e.what());
    }
  });
}

}  // namespace oat_emu
