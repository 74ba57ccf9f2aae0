// The CUDA simulator's runtime: launches, the block scheduler, barriers and
// warp exchanges (the API is in cuda_sim.h).
//
// Note [CUDA simulation]
// ~~~~~~~~~~~~~~~~~~~~~~
// The .cu files are compiled a second time as plain C++ (OPFORGE_CUDA_SIM)
// into opforge._cuda_sim, whose ops (torch.ops.opforge_cuda_sim.*) run the
// CUDA entry points and kernels on CPU tensors. A launch validates its
// configuration with CUDA's limits, then runs the grid's blocks on a few OS
// threads; each block's CUDA threads are fibers on one OS thread, each with
// its own stack. A fiber runs until it finishes or reaches __syncthreads() or
// a warp operation; the scheduler resumes the others round-robin.
// - __syncthreads() releases only when every thread of the block reached it:
//   a thread that exits while others wait (a barrier in divergent code) fails
//   the launch, as does a block where nothing can run (deadlock).
// - A warp operation waits for every lane of its mask, checks that the mask
//   names existing lanes (partial warps), includes the caller and is the same
//   on every lane, and that a shuffle reads a lane of the mask.
// - Failures end the launch with the CUDA error a GPU would give (or
//   cudaErrorLaunchFailure for undefined behaviour), and a message naming the
//   kernel, the launch site, the block and the thread.
// - Under ThreadSanitizer every thread slot of a block is a TSan fiber switched
//   without synchronization; barriers and warp exchanges are the only
//   happens-before edges between threads of a block, so a missing barrier is a
//   reported race. Blocks then run one at a time, on the launching thread.
//   This file is compiled without instrumentation (its own bookkeeping is
//   shared by all fibers; CMake defines OPFORGE_SIM_TSAN for it, since
//   -fno-sanitize=thread also drops __SANITIZE_THREAD__); the kernels are
//   instrumented.
// - __shared__ variables are static thread_local: one block runs at a time
//   on an OS thread, so each block sees its own copy (plain statics and one
//   block at a time under AddressSanitizer, whose redzones then cover them).
// - Device code takes the device branch of opforge/math (OPFORGE_DEVICE_MATH
//   in math/functions.h), not the host's vectorizing approximations: CUDA's
//   expf, erff, tanhf, log1pf and powf are the host libm's here, within a few
//   ulp of the GPU's (CUDA's documented bounds), which the tests' tolerances allow.
#include "cuda_sim.h"
#include "fiber.h"
#include "stats.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(OPFORGE_SIM_TSAN)
#include <sanitizer/tsan_interface.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace opforge::sim {
namespace {

// CUDA's limits (compute capability 8.x/9.x).
constexpr unsigned k_max_threads_per_block = 1024;
constexpr unsigned k_max_block_x = 1024;
constexpr unsigned k_max_block_y = 1024;
constexpr unsigned k_max_block_z = 64;
constexpr unsigned long long k_max_grid_x = (1ull << 31) - 1;
constexpr unsigned k_max_grid_yz = 65535;
constexpr std::size_t k_max_shared_bytes = std::size_t{48} << 10;

enum class state : unsigned char { runnable, at_barrier, at_warp, done };

struct sim_thread {
  uint3 idx{};
  unsigned linear = 0;
  state st = state::runnable;
  bool started = false;
  fiber_context context;
  fiber_stack stack;
  std::uint64_t waiting_gen = 0;  // generation of the barrier or warp exchange it waits in
#if defined(OPFORGE_SIM_TSAN)
  void* tsan_fiber = nullptr;
#endif
};

struct warp_state {
  unsigned lanes = 0;     // lanes that exist (a partial last warp has fewer than 32)
  unsigned mask = 0;      // mask of the exchange in progress
  unsigned arrived = 0;
  warp_op op = warp_op::sync;
  std::uint64_t gen = 0;  // completed exchanges
  // Double-buffered by generation: a lane that leaves exchange k may publish
  // into k + 1 before the slowest lane has read k.
  alignas(16) unsigned char slots[2][32][16];
  int tsan_sync[2];
};

// One block in flight on this OS thread.
struct block_run {
  const launch_site* site = nullptr;
  dim3 grid, block;
  uint3 block_idx{};
  void (*body)(void*) = nullptr;
  void* context = nullptr;
  std::vector<sim_thread> threads;
  std::vector<warp_state> warps;
  unsigned done = 0;
  unsigned at_barrier = 0;
  std::uint64_t barrier_gen = 0;
  sim_thread* current = nullptr;
  fiber_context scheduler;
  bool failed = false;
  cudaError_t error = cudaSuccess;
  std::string message;
  int tsan_barrier[2];
  int tsan_start;
  int tsan_end;
#if defined(OPFORGE_SIM_TSAN)
  void* tsan_scheduler = nullptr;
#endif
#if defined(__SANITIZE_ADDRESS__)
  void* asan_fake_stack = nullptr;
  const void* scheduler_stack_bottom = nullptr;
  std::size_t scheduler_stack_size = 0;
#endif
};

thread_local block_run* tl_block = nullptr;
thread_local cudaError_t tl_last_error = cudaSuccess;

block_run& running() {
  if (tl_block == nullptr || tl_block->current == nullptr) {
    std::fprintf(stderr, "opforge cuda_sim: a device function ran outside a kernel launch\n");
    std::abort();
  }
  return *tl_block;
}

std::string describe(const block_run& b, const sim_thread* t) {
  std::ostringstream s;
  s << b.site->kernel << " (launched at " << b.site->file << ":" << b.site->line << ", grid (" << b.grid.x << ", "
    << b.grid.y << ", " << b.grid.z << "), block (" << b.block.x << ", " << b.block.y << ", " << b.block.z
    << ")), block (" << b.block_idx.x << ", " << b.block_idx.y << ", " << b.block_idx.z << ")";
  if (t != nullptr) {
    s << ", thread (" << t->idx.x << ", " << t->idx.y << ", " << t->idx.z << ")";
  }
  return s.str();
}

// ---- switching between the scheduler and the fibers ----

void enter_fiber(block_run& b, sim_thread& t) {
  b.current = &t;
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(&b.asan_fake_stack, t.stack.base, t.stack.size);
#endif
#if defined(OPFORGE_SIM_TSAN)
  __tsan_switch_to_fiber(t.tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
  switch_fiber(b.scheduler, t.context);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(b.asan_fake_stack, nullptr, nullptr);
#endif
  b.current = nullptr;
}

// Back to the scheduler; `finished`: this fiber is never resumed.
void leave_fiber(block_run& b, sim_thread& t, bool finished) {
#if defined(__SANITIZE_ADDRESS__)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(finished ? nullptr : &fake, b.scheduler_stack_bottom, b.scheduler_stack_size);
#endif
#if defined(OPFORGE_SIM_TSAN)
  __tsan_switch_to_fiber(b.tsan_scheduler, __tsan_switch_to_fiber_no_sync);
#endif
  switch_fiber(t.context, b.scheduler);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, &b.scheduler_stack_bottom, &b.scheduler_stack_size);
#endif
}

void fiber_main(void* arg) {
  auto& b = *static_cast<block_run*>(arg);
  sim_thread& t = *b.current;
  t.started = true;
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack_bottom, &b.scheduler_stack_size);
#endif
#if defined(OPFORGE_SIM_TSAN)
  __tsan_acquire(&b.tsan_start);
#endif
  b.body(b.context);
  t.st = state::done;
  ++b.done;
#if defined(OPFORGE_SIM_TSAN)
  __tsan_release(&b.tsan_end);
#endif
  leave_fiber(b, t, true);
  std::abort();  // never resumed
}

// Ends the launch from inside a fiber: the scheduler abandons the block.
[[noreturn]] void fail_here(cudaError_t error, const std::string& what) {
  block_run& b = running();
  sim_thread& t = *b.current;
  if (!b.failed) {
    b.failed = true;
    b.error = error;
    b.message = what + " in " + describe(b, &t);
  }
  t.st = state::done;
#if defined(OPFORGE_SIM_TSAN)
  __tsan_release(&b.tsan_end);  // the scheduler reads the message
#endif
  leave_fiber(b, t, true);
  std::abort();
}

void wait(block_run& b, sim_thread& t, state st) {
  t.st = st;
  leave_fiber(b, t, false);
  if (b.failed) {
    // Resumed only to retire: the block was abandoned (retire_fibers).
    t.st = state::done;
#if defined(OPFORGE_SIM_TSAN)
    __tsan_release(&b.tsan_end);
#endif
    leave_fiber(b, t, true);
    std::abort();
  }
}

// After a failure, each fiber suspended mid-kernel runs once more to leave for
// good, so that (under TSan) what it did is ordered before what follows.
void retire_fibers(block_run& b) {
  for (sim_thread& t : b.threads) {
    if (t.started && t.st != state::done) {
      enter_fiber(b, t);
    }
  }
}

// ---- one block ----

#if defined(OPFORGE_SIM_TSAN)
// TSan fibers for the thread slots of a block, created once (creating one per
// CUDA thread per block made the sanitized suite 10x slower). Consecutive
// blocks' threads of one slot are ordered; all others race unless synchronized.
void* tsan_fiber(unsigned slot) {
  thread_local std::vector<void*> fibers;
  while (fibers.size() <= slot) {
    fibers.push_back(__tsan_create_fiber(0));
  }
  return fibers[slot];
}
#endif

void prepare_block(block_run& b) {
  const unsigned n = b.block.x * b.block.y * b.block.z;
  b.threads.resize(n);
  b.warps.assign((n + 31) / 32, warp_state{});
  for (unsigned w = 0; w < b.warps.size(); ++w) {
    const unsigned lanes = std::min(32u, n - 32 * w);
    b.warps[w].lanes = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  }
  b.done = 0;
  b.at_barrier = 0;
  b.barrier_gen = 0;
  for (unsigned i = 0; i < n; ++i) {
    sim_thread& t = b.threads[i];
    t.linear = i;
    t.idx = {i % b.block.x, (i / b.block.x) % b.block.y, i / (b.block.x * b.block.y)};
    t.st = state::runnable;
    t.started = false;
    if (t.stack.base == nullptr) {
      t.stack = acquire_stack();
    }
#if defined(__SANITIZE_ADDRESS__)
    // An abandoned fiber may have left redzones behind on this stack.
    __asan_unpoison_memory_region(t.stack.base, t.stack.size);
#endif
    make_fiber(t.context, t.stack, &fiber_main, &b);
#if defined(OPFORGE_SIM_TSAN)
    t.tsan_fiber = tsan_fiber(i);
#endif
  }
#if defined(OPFORGE_SIM_TSAN)
  // The launch arguments and the inputs, written before, are visible to every fiber.
  __tsan_release(&b.tsan_start);
#endif
}

void finish_block(block_run& b) {
#if defined(OPFORGE_SIM_TSAN)
  __tsan_acquire(&b.tsan_end);
#else
  (void)b;
#endif
}

std::string deadlock_report(const block_run& b) {
  std::ostringstream s;
  if (b.at_barrier > 0 && b.done > 0) {
    s << "__syncthreads() reached by " << b.at_barrier << " of " << b.threads.size() << " threads while "
      << b.done << " had exited (a barrier in divergent code)";
    return s.str();
  }
  for (unsigned w = 0; w < b.warps.size(); ++w) {
    const warp_state& ws = b.warps[w];
    if (ws.arrived == 0) {
      continue;
    }
    s << "warp " << w << ": a warp operation with mask 0x" << std::hex << ws.mask << std::dec
      << " waits for lanes";
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((ws.mask >> lane & 1u) && !(ws.arrived >> lane & 1u)) {
        const sim_thread& t = b.threads[32 * w + lane];
        s << " " << lane << (t.st == state::done ? " (exited)" : t.st == state::at_barrier ? " (at __syncthreads)" : " (in another warp operation)");
      }
    }
    s << " (warp operation in divergent code)";
    return s.str();
  }
  return "no thread of the block can make progress";
}

void run_block(block_run& b) {
  prepare_block(b);
  const auto n = static_cast<unsigned>(b.threads.size());
  for (;;) {
    bool ran = false;
    for (unsigned i = 0; i < n && !b.failed; ++i) {
      sim_thread& t = b.threads[i];
      if (t.st == state::runnable) {
        enter_fiber(b, t);
        ran = true;
      }
    }
    if (b.failed || b.done == n) {
      break;
    }
    if (b.at_barrier > 0 && b.at_barrier == n) {
      ++b.barrier_gen;
      b.at_barrier = 0;
      for (sim_thread& t : b.threads) {
        t.st = state::runnable;
      }
      continue;
    }
    if (!ran) {
      b.failed = true;
      b.error = cudaErrorLaunchFailure;
      b.message = deadlock_report(b) + " in " + describe(b, nullptr);
      break;
    }
  }
  if (b.failed) {
    retire_fibers(b);
  }
  finish_block(b);
}

std::string config_error(const launch_site& site, dim3 grid, dim3 block, std::size_t shared_bytes,
                         cudaError_t& code) {
  std::ostringstream s;
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  code = cudaErrorInvalidConfiguration;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) {
    s << "empty grid (" << grid.x << ", " << grid.y << ", " << grid.z << ")";
  } else if (grid.x > k_max_grid_x || grid.y > k_max_grid_yz || grid.z > k_max_grid_yz) {
    s << "grid (" << grid.x << ", " << grid.y << ", " << grid.z << ") exceeds (2^31-1, 65535, 65535)";
  } else if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > k_max_block_x || block.y > k_max_block_y ||
             block.z > k_max_block_z || threads > k_max_threads_per_block) {
    s << "block (" << block.x << ", " << block.y << ", " << block.z << ") is empty or exceeds "
      << k_max_threads_per_block << " threads / (1024, 1024, 64)";
  } else if (shared_bytes > k_max_shared_bytes) {
    code = cudaErrorInvalidValue;
    s << shared_bytes << " bytes of dynamic shared memory exceed 48 KiB";
  } else {
    code = cudaSuccess;
    return {};
  }
  return s.str() + " launching " + site.kernel + " at " + site.file + ":" + std::to_string(site.line);
}

thread_local std::string tl_last_message;

void set_error(cudaError_t code, const std::string& message) {
  tl_last_error = code;
  tl_last_message = message;
}

unsigned worker_count(unsigned long long blocks) {
#if defined(__SANITIZE_ADDRESS__)
  return 1;  // __shared__ variables are process-wide statics (cuda_sim.h)
#endif
#if defined(OPFORGE_SIM_TSAN)
  return 1;  // the TSan fibers live on the launching thread (tsan_fiber)
#endif
  static const unsigned workers = [] {
    if (const char* env = std::getenv("OPFORGE_CUDA_SIM_THREADS")) {
      return static_cast<unsigned>(std::max(1, std::atoi(env)));
    }
    return std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  }();
  return static_cast<unsigned>(std::min<unsigned long long>(workers, blocks));
}

}  // namespace

uint3 thread_idx() { return running().current->idx; }
uint3 block_idx() { return running().block_idx; }
dim3 block_dim() { return running().block; }
dim3 grid_dim() { return running().grid; }
unsigned lane_id() { return running().current->linear & 31u; }

void syncthreads() {
  block_run& b = running();
  sim_thread& t = *b.current;
  t.waiting_gen = b.barrier_gen;
  ++b.at_barrier;
#if defined(OPFORGE_SIM_TSAN)
  __tsan_release(&b.tsan_barrier[t.waiting_gen & 1]);
#endif
  wait(b, t, state::at_barrier);
#if defined(OPFORGE_SIM_TSAN)
  __tsan_acquire(&b.tsan_barrier[t.waiting_gen & 1]);
#endif
}

void warp_exchange(warp_op op, unsigned mask, const void* value, std::size_t bytes, int src, void* result) {
  block_run& b = running();
  sim_thread& t = *b.current;
  warp_state& w = b.warps[t.linear / 32];
  const unsigned lane = t.linear & 31u;
  static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                "a warp vote", "__syncwarp"};
  const char* name = names[static_cast<int>(op)];
  auto hex = [](unsigned m) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", m);
    return std::string(buf);
  };
  if ((mask & ~w.lanes) != 0) {
    fail_here(cudaErrorLaunchFailure, std::string(name) + " with mask " + hex(mask) +
                                          " names lanes that do not exist (warp lanes " + hex(w.lanes) + ")");
  }
  if (!(mask >> lane & 1u)) {
    fail_here(cudaErrorLaunchFailure, std::string(name) + " with mask " + hex(mask) + " called by lane " +
                                          std::to_string(lane) + ", which the mask leaves out");
  }
  if (w.arrived == 0) {
    w.mask = mask;
    w.op = op;
  } else if (w.mask != mask || w.op != op) {
    fail_here(cudaErrorLaunchFailure, std::string(name) + " with mask " + hex(mask) + " while other lanes are in " +
                                          names[static_cast<int>(w.op)] + " with mask " + hex(w.mask) +
                                          " (warp operation in divergent code)");
  }
  if (src >= 0 && !(mask >> src & 1u)) {
    fail_here(cudaErrorLaunchFailure, std::string(name) + " reads lane " + std::to_string(src) +
                                          ", which is not in the mask " + hex(mask));
  }
  const std::uint64_t gen = w.gen;
  std::memcpy(w.slots[gen & 1][lane], value, bytes);
  w.arrived |= 1u << lane;
#if defined(OPFORGE_SIM_TSAN)
  __tsan_release(&w.tsan_sync[gen & 1]);
#endif
  if (w.arrived == w.mask) {
    ++w.gen;
    w.arrived = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if ((w.mask >> l & 1u) && l != lane) {
        b.threads[32 * (t.linear / 32) + l].st = state::runnable;
      }
    }
  } else {
    t.waiting_gen = gen;
    wait(b, t, state::at_warp);
  }
#if defined(OPFORGE_SIM_TSAN)
  __tsan_acquire(&w.tsan_sync[gen & 1]);
#endif
  if (src >= 0 && result != nullptr) {
    std::memcpy(result, w.slots[gen & 1][src], bytes);
  }
}

unsigned warp_ballot(unsigned mask, bool predicate) {
  block_run& b = running();
  const unsigned warp = b.current->linear / 32;
  const unsigned char mine = predicate ? 1 : 0;
  warp_exchange(warp_op::vote, mask, &mine, 1, -1, nullptr);
  // Every lane of the mask published into the slots of the exchange just completed.
  const warp_state& w = b.warps[warp];
  const std::uint64_t gen = w.gen - 1;
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) && w.slots[gen & 1][l][0] != 0) {
      ballot |= 1u << l;
    }
  }
  return ballot;
}

void syncwarp(unsigned mask) { warp_exchange(warp_op::sync, mask, nullptr, 0, -1, nullptr); }

void trap(const char* what) { fail_here(cudaErrorIllegalInstruction, std::string("kernel executed ") + what); }

void assert_fail(const char* condition, const char* file, int line) {
  fail_here(cudaErrorAssert, std::string("device-side assertion `") + condition + "` failed at " + file + ":" +
                                 std::to_string(line));
}

cudaError_t launch(const launch_site& site, dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t,
                   void (*body)(void*), void* context) {
  if (tl_block != nullptr && tl_block->current != nullptr) {
    std::fprintf(stderr, "opforge cuda_sim: kernel launched from device code (%s)\n", site.kernel);
    std::abort();
  }
  cudaError_t code = cudaSuccess;
  const std::string bad = config_error(site, grid, block, shared_bytes, code);
  if (code != cudaSuccess) {
    set_error(code, bad);
    return code;
  }
  record_launch(site, block.x * block.y * block.z);
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  const unsigned workers = worker_count(blocks);
  std::atomic<unsigned long long> next{0};
  std::vector<block_run> runs(workers);
  auto work = [&](unsigned w) {
    block_run& b = runs[w];
    b.site = &site;
    b.grid = grid;
    b.block = block;
    b.body = body;
    b.context = context;
#if defined(OPFORGE_SIM_TSAN)
    b.tsan_scheduler = __tsan_get_current_fiber();
#endif
    tl_block = &b;
    for (unsigned long long i = next++; i < blocks && !b.failed; i = next++) {
      b.block_idx = {static_cast<unsigned>(i % grid.x), static_cast<unsigned>((i / grid.x) % grid.y),
                     static_cast<unsigned>(i / (1ull * grid.x * grid.y))};
      run_block(b);
      if (b.failed) {
        next = blocks;  // stop the other workers too
      }
    }
    tl_block = nullptr;
    for (sim_thread& t : b.threads) {
      release_stack(t.stack);
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < workers; ++w) {
    helpers.emplace_back(work, w);
  }
  work(0);
  for (std::thread& h : helpers) {
    h.join();
  }
  for (const block_run& b : runs) {
    if (b.failed) {
      set_error(b.error, b.message);
      return b.error;
    }
  }
  return cudaSuccess;
}

std::string last_error_message() { return tl_last_message; }

}  // namespace opforge::sim

cudaError_t cudaGetLastError() {
  const cudaError_t e = opforge::sim::tl_last_error;
  opforge::sim::tl_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return opforge::sim::tl_last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorAssert: return "cudaErrorAssert";
    case cudaErrorIllegalInstruction: return "cudaErrorIllegalInstruction";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

// CUDA's own wording, so messages read as on a GPU.
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNotYetImplemented: return "function not yet implemented";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorIllegalInstruction: return "an illegal instruction was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
  }
  return "unknown error";
}
