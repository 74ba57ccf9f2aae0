#pragma once
// Stackful fibers for the CUDA simulator: one per simulated CUDA thread of a
// block, switched on one OS thread at barriers, warp operations and kernel
// exit. A hand-written switch on x86-64 (callee-saved registers, MXCSR and
// the x87 control word: about 20 instructions, where swapcontext makes a
// signal-mask system call per switch); ucontext elsewhere.
#include <cstddef>

namespace opforge::sim {

struct fiber_stack {
  void* base = nullptr;  // lowest usable address (a guard page lies below it)
  std::size_t size = 0;
};

// A stack from a process-wide free list (stacks are not tied to an OS thread).
fiber_stack acquire_stack();
void release_stack(fiber_stack stack);

// A suspended execution context.
struct fiber_context {
  void* sp = nullptr;
#if !defined(__x86_64__)
  void* ucontext = nullptr;
#endif
};

// Prepares `context` to run entry(arg) on `stack` when first switched to;
// entry must never return (it switches away for the last time instead).
void make_fiber(fiber_context& context, fiber_stack stack, void (*entry)(void*), void* arg);

// Saves the running context into `from` and resumes `to`.
void switch_fiber(fiber_context& from, fiber_context& to);

}  // namespace opforge::sim
