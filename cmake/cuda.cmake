# CUDA set-up. Architectures come from TORCH_CUDA_ARCH_LIST (default
# 8.0;9.0+PTX: SASS for Ampere and Hopper, PTX that newer GPUs compile at load;
# torch's own default starts at compute_50, which nvcc 13 rejects).
if(DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT "$ENV{TORCH_CUDA_ARCH_LIST}" STREQUAL "")
  set(OPFORGE_CUDA_ARCHS "$ENV{TORCH_CUDA_ARCH_LIST}")
else()
  set(OPFORGE_CUDA_ARCHS "8.0;9.0+PTX")
endif()
string(REPLACE " " ";" _archs "${OPFORGE_CUDA_ARCHS}")
set(CMAKE_CUDA_ARCHITECTURES "")
foreach(_arch IN LISTS _archs)
  string(REPLACE "+PTX" "" _bare "${_arch}")
  string(REPLACE "." "" _bare "${_bare}")
  if(_arch MATCHES "\\+PTX$")
    list(APPEND CMAKE_CUDA_ARCHITECTURES "${_bare}")           # SASS + PTX
  else()
    list(APPEND CMAKE_CUDA_ARCHITECTURES "${_bare}-real")      # SASS only
  endif()
endforeach()
# torch 2.14 headers need C++20, which CMake before 3.28 does not pass to nvcc.
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # torch uses the shared cudart
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
