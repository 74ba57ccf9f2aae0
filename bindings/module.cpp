// The `opforge._C` extension module: the generated operator bindings plus a
// few facts about this build. Importing it runs the static TORCH_LIBRARY
// registrations in the generated translation units.
#include <torch/csrc/utils/pybind.h>

#include "bindings/arguments.h"

#include <opforge/core/cpu_capability.h>

#ifndef OPFORGE_CUDA_ARCHS
#define OPFORGE_CUDA_ARCHS ""
#endif

PYBIND11_MODULE(_C, m) {
  m.doc() = "opforge compiled operators (generated pybind11 fast path)";
  opforge::bindings::register_ops(m);
#ifdef OPFORGE_WITH_CUDA
  m.attr("_cuda_compiled") = true;
#else
  m.attr("_cuda_compiled") = false;
#endif
  m.attr("_cuda_archs") = OPFORGE_CUDA_ARCHS;
  m.attr("_torch_version") = OPFORGE_TORCH_VERSION;
  // Note [CPU capabilities]: the kernels' capability, chosen at first use.
  m.def("_cpu_capability", [] {
    namespace cc = opforge::cpu_capability;
    return std::string(cc::name(cc::selected()));
  });
  m.attr("_cpu_capabilities") = opforge::cpu_capability::compiled();
}
