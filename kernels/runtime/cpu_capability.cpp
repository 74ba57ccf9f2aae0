// The load-time choice of CPU kernels (Note [CPU capabilities] in
// opforge/core/cpu_capability.h).
#include <opforge/core/cpu_capability.h>

#include <c10/util/Exception.h>

#include <cstdlib>
#include <string_view>

namespace opforge::cpu_capability {
namespace {

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  // What the AVX-512 copies are compiled for (F, BW, VL, DQ, CD).
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
#else
  return false;
#endif
}

capability choose() {
  const bool avx512 = OPFORGE_CPU_HAVE_AVX512 && cpu_has_avx512();
  const char* forced = std::getenv("OPFORGE_CPU_CAPABILITY");
  if (forced == nullptr || *forced == '\0') {
    return avx512 ? capability::avx512 : capability::baseline;
  }
  const std::string_view want(forced);
  TORCH_CHECK(want == "default" || want == "avx2" || want == "avx512",
              "opforge: OPFORGE_CPU_CAPABILITY must be default, avx2 or avx512, got '", want, "'");
  return want == "avx512" && avx512 ? capability::avx512 : capability::baseline;
}

}  // namespace

capability selected() {
  static const capability chosen = choose();
  return chosen;
}

const char* name(capability c) {
#if defined(__x86_64__) || defined(__i386__)
  return c == capability::avx512 ? "avx512" : "avx2";
#else
  (void)c;
  return "default";
#endif
}

const char* compiled() {
#if OPFORGE_CPU_HAVE_AVX512
  return "avx2 avx512";
#elif defined(__x86_64__) || defined(__i386__)
  return "avx2";
#else
  return "default";
#endif
}

}  // namespace opforge::cpu_capability
