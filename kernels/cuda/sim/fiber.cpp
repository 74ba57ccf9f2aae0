// Fiber stacks and context switches for the CUDA simulator (see fiber.h).
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace opforge::sim {
namespace {

// Sanitizers put redzones and fake frames on the stack: give them room.
#if defined(__SANITIZE_ADDRESS__) || defined(OPFORGE_SIM_TSAN)
constexpr std::size_t k_stack_bytes = std::size_t{512} << 10;
#else
constexpr std::size_t k_stack_bytes = std::size_t{128} << 10;
#endif

std::mutex& pool_mutex() {
  static std::mutex m;
  return m;
}
std::vector<fiber_stack>& pool() {
  static auto* p = new std::vector<fiber_stack>();  // never destroyed: stacks outlive exit handlers
  return *p;
}

}  // namespace

fiber_stack acquire_stack() {
  {
    const std::lock_guard<std::mutex> lock(pool_mutex());
    if (!pool().empty()) {
      const fiber_stack s = pool().back();
      pool().pop_back();
      return s;
    }
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, k_stack_bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    throw std::bad_alloc();
  }
  // A stack overflow faults on the guard page instead of corrupting a neighbour.
  mprotect(p, page, PROT_NONE);
  return {static_cast<char*>(p) + page, k_stack_bytes};
}

void release_stack(fiber_stack stack) {
  const std::lock_guard<std::mutex> lock(pool_mutex());
  pool().push_back(stack);
}

#if defined(__x86_64__)

extern "C" void opforge_sim_switch(void** save_sp, void* load_sp);
extern "C" void opforge_sim_trampoline();

// opforge_sim_switch(save, load): push the callee-saved registers and the
// floating-point control words, store rsp to *save, load rsp from `load`, pop
// the same and return into the resumed context. A new fiber's first "return"
// lands in the trampoline, which calls entry(arg) from r13/r12.
asm(R"(
  .text
  .globl opforge_sim_switch
  .type opforge_sim_switch,@function
opforge_sim_switch:
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
  .size opforge_sim_switch, .-opforge_sim_switch

  .globl opforge_sim_trampoline
  .type opforge_sim_trampoline,@function
opforge_sim_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size opforge_sim_trampoline, .-opforge_sim_trampoline
  .section .note.GNU-stack,"",@progbits
  .text
)");

void make_fiber(fiber_context& context, fiber_stack stack, void (*entry)(void*), void* arg) {
  auto top = reinterpret_cast<std::uintptr_t>(stack.base) + stack.size;
  top &= ~std::uintptr_t{15};
  auto* frame = reinterpret_cast<std::uint64_t*>(top) - 8;
  // Control words of the creating thread (default rounding, exceptions masked).
  std::uint32_t mxcsr = 0;
  std::uint16_t fpucw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  frame[0] = static_cast<std::uint64_t>(mxcsr) | (static_cast<std::uint64_t>(fpucw) << 32);
  frame[1] = 0;                                      // r15
  frame[2] = 0;                                      // r14
  frame[3] = reinterpret_cast<std::uint64_t>(entry);  // r13
  frame[4] = reinterpret_cast<std::uint64_t>(arg);    // r12
  frame[5] = 0;                                      // rbx
  frame[6] = 0;                                      // rbp
  frame[7] = reinterpret_cast<std::uint64_t>(&opforge_sim_trampoline);
  context.sp = frame;
}

void switch_fiber(fiber_context& from, fiber_context& to) { opforge_sim_switch(&from.sp, to.sp); }

#else  // portable fallback

namespace {
struct start_args {
  void (*entry)(void*);
  void* arg;
};
void start(unsigned hi, unsigned lo) {
  auto* a = reinterpret_cast<start_args*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
  a->entry(a->arg);
  std::abort();
}
}  // namespace

void make_fiber(fiber_context& context, fiber_stack stack, void (*entry)(void*), void* arg) {
  auto* uc = static_cast<ucontext_t*>(context.ucontext);
  if (uc == nullptr) {
    uc = new ucontext_t();
    context.ucontext = uc;
  }
  getcontext(uc);
  uc->uc_stack.ss_sp = stack.base;
  uc->uc_stack.ss_size = stack.size - sizeof(start_args);
  uc->uc_link = nullptr;
  auto* a = reinterpret_cast<start_args*>(static_cast<char*>(stack.base) + stack.size - sizeof(start_args));
  *a = {entry, arg};
  const auto bits = reinterpret_cast<std::uintptr_t>(a);
  makecontext(uc, reinterpret_cast<void (*)()>(&start), 2, static_cast<unsigned>(bits >> 32),
              static_cast<unsigned>(bits & 0xffffffffu));
}

void switch_fiber(fiber_context& from, fiber_context& to) {
  if (from.ucontext == nullptr) {
    from.ucontext = new ucontext_t();
  }
  swapcontext(static_cast<ucontext_t*>(from.ucontext), static_cast<ucontext_t*>(to.ucontext));
}

#endif

}  // namespace opforge::sim
