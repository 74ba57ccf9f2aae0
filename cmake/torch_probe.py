"""Print what CMake needs to build against the interpreter's torch, as KEY=VALUE lines."""

import pybind11
import torch
from torch.utils import cpp_extension

print(f"TORCH_PROBE_VERSION={torch.__version__}")
print(f"TORCH_PROBE_CUDA={torch.version.cuda or ''}")
print(f"TORCH_PROBE_INCLUDES={','.join(cpp_extension.include_paths())}")
print(f"TORCH_PROBE_LIBDIR={cpp_extension.library_paths()[0]}")
print(f"TORCH_PROBE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
print(f"TORCH_PROBE_PYBIND11_DIR={pybind11.get_cmake_dir()}")
