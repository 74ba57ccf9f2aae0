#pragma once
// Note [CPU capabilities]: CPU kernel units (the generated pointwise kernels,
// csrc/kernels/<op>_cpu.cpp, the structured ops' csrc/structured/<source>_cpu.cpp
// and the helper sources in kernels/cpu/) are compiled once per capability: the
// baseline (OPFORGE_CPU_FLAGS; x86-64-v3, AVX2, on x86) and, on x86, AVX-512
// (OPFORGE_CPU_AVX512_FLAGS, x86-64-v4 class, 512-bit vectors). Each copy
// defines its kernels and helpers in its own namespace, opforge::cpu_avx2 or
// opforge::cpu_avx512 (OPFORGE_CPU_CAPABILITY while compiling it), so the
// copies never merge at link time; the pointwise engine's helpers have internal
// linkage (pointwise/cpu.h); plan structs stay shared (opforge::). The
// generated code calls a kernel through OPFORGE_CPU_KERNEL(name<T>), which
// picks the copy for the capability selected once at load time: the best the
// CPU supports, or the one OPFORGE_CPU_CAPABILITY=default|avx2|avx512 forces
// (default and avx2 name the baseline; a capability the CPU or the build lacks
// falls back to the best available). opforge.build_info() reports both.
#include <type_traits>

// Set by CMake for every unit; these defaults serve builds outside it (the
// generator's compile tests).
#ifndef OPFORGE_CPU_BASELINE
#define OPFORGE_CPU_BASELINE cpu_avx2
#endif
#ifndef OPFORGE_CPU_HAVE_AVX512
#define OPFORGE_CPU_HAVE_AVX512 0
#endif
// The namespace of the kernels the current unit compiles.
#ifndef OPFORGE_CPU_CAPABILITY
#define OPFORGE_CPU_CAPABILITY OPFORGE_CPU_BASELINE
#endif

namespace opforge::cpu_capability {

enum class capability { baseline, avx512 };

// The capability kernels run with (selected on first use, then fixed).
capability selected();

// "avx2" / "avx512" (the baseline is named by what it is: "default" off x86).
const char* name(capability c);

// The capabilities this build compiled, best last.
const char* compiled();

template <typename F>
F* pick(F* baseline, std::type_identity_t<F*> avx512) {
  return avx512 != nullptr && selected() == capability::avx512 ? avx512 : baseline;
}

}  // namespace opforge::cpu_capability

#if OPFORGE_CPU_HAVE_AVX512
#define OPFORGE_CPU_AVX512_KERNEL(...) &::opforge::cpu_avx512::__VA_ARGS__
#else
#define OPFORGE_CPU_AVX512_KERNEL(...) nullptr
#endif

// The copy of CPU kernel `name<T>` for the selected capability.
#define OPFORGE_CPU_KERNEL(...)                                                      \
  ::opforge::cpu_capability::pick(&::opforge::OPFORGE_CPU_BASELINE::__VA_ARGS__, \
                                  OPFORGE_CPU_AVX512_KERNEL(__VA_ARGS__))
