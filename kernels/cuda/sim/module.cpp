// opforge._cuda_sim: loading it registers torch.ops.opforge_cuda_sim.* (the
// CUDA entry points and kernels run by the simulator on CPU tensors, see Note
// [CUDA simulation] in runtime.cpp); its functions report what ran.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "stats.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace py = pybind11;

namespace opforge::sim::selftest {
int run_selftest(const std::string& name, void* buffer);
}

PYBIND11_MODULE(_cuda_sim, m) {
  m.doc() = "opforge's CUDA kernels executed on the CPU (torch.ops.opforge_cuda_sim.*)";
  m.def(
      "launched_kernels",
      [] {
        std::map<std::string, std::pair<unsigned long long, unsigned>> out;
        for (const auto& [key, s] : opforge::sim::launched_kernels()) {
          out[key] = {s.launches, s.max_block_threads};
        }
        return out;
      },
      "{'file.cu:kernel': (launches, largest block in threads)} since the last reset");
  m.def("reset_launched_kernels", &opforge::sim::reset_launched_kernels);
  m.def("set_capturing", &opforge::sim::set_capturing,
        "Pretend the current stream is being captured into a CUDA graph (entry points skip host readbacks)");
  m.def("set_index_limit", &opforge::sim::set_index_limit,
        "The largest index the kernels' 32-bit index math takes (default 2**31 - 1): lower it to split plans");
  m.def(
      "run_selftest",
      [](const std::string& name, std::uintptr_t buffer) {
        const int code = opforge::sim::selftest::run_selftest(name, reinterpret_cast<void*>(buffer));
        return std::make_pair(code, code == 0 ? std::string() : opforge::sim::last_error_message());
      },
      "Runs one of the simulator's self-test kernels over the buffer at that address; (error code, message)");
  m.attr("max_blocks") = OPFORGE_CUDA_MAX_BLOCKS;
}
