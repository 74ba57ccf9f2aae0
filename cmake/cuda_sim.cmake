# opforge._cuda_sim: the .cu files are compiled as C++ through one-line
# wrappers (a source file has one language per CMake directory, and _C
# compiles them with nvcc), the .cpp entry points again with OPFORGE_CUDA_SIM,
# plus the simulator runtime and the generated opforge_cuda_sim registrations.
# Its symbols stay private (pybind11 modules are built with hidden
# visibility), so _C's real CUDA entry points of the same names do not clash.
file(GLOB _sim_device_sources CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/kernels/cuda/*.cu")
if(OPFORGE_STRUCTURED_KERNEL_FILES)
  list(REMOVE_ITEM _sim_device_sources ${OPFORGE_STRUCTURED_KERNEL_FILES})
endif()
# The entry points, and the meta functions, composites, loss reductions and
# argument checks they share with the CPU side.
file(GLOB _sim_entry_sources CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/kernels/cuda/*.cpp"
  "${CMAKE_SOURCE_DIR}/kernels/composite/*.cpp"
  "${CMAKE_SOURCE_DIR}/kernels/runtime/loss_reduction.cpp" "${CMAKE_SOURCE_DIR}/kernels/runtime/choices.cpp")
set(_sim_wrappers)
foreach(_cu IN LISTS _sim_device_sources OPFORGE_GENERATED_CUDA_DEVICE_SOURCES)
  get_filename_component(_name "${_cu}" NAME)
  get_filename_component(_dir "${_cu}" DIRECTORY)
  get_filename_component(_dir "${_dir}" NAME)  # kernels/cuda/x.cu and generated/csrc/*/x.cu apart
  set(_wrapper "${CMAKE_BINARY_DIR}/cuda_sim/${_dir}/${_name}.cpp")
  file(CONFIGURE OUTPUT "${_wrapper}" CONTENT "#include \"${_cu}\"\n" @ONLY)
  list(APPEND _sim_wrappers "${_wrapper}")
endforeach()
set(_sim_runtime
  "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/runtime.cpp"
  "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/fiber.cpp"
  "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/stats.cpp")
# The simulator's own test kernels, a .cu like the others.
set(_sim_selftest "${CMAKE_BINARY_DIR}/cuda_sim/selftest.cu.cpp")
file(CONFIGURE OUTPUT "${_sim_selftest}" CONTENT "#include \"${CMAKE_SOURCE_DIR}/kernels/cuda/sim/selftest.cu\"\n" @ONLY)
list(APPEND _sim_wrappers "${_sim_selftest}")

pybind11_add_module(_cuda_sim MODULE NO_EXTRAS
  "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/module.cpp" ${_sim_runtime} ${_sim_wrappers} ${_sim_entry_sources}
  ${OPFORGE_CUDA_SIM_GENERATED_SOURCES})
# sim/include first: its cuda_runtime.h stands in for the toolkit's.
target_include_directories(_cuda_sim BEFORE PRIVATE "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/include")
target_include_directories(_cuda_sim PRIVATE ${OPFORGE_INCLUDE_DIRS})
target_link_libraries(_cuda_sim PRIVATE opforge_torch)
target_compile_definitions(_cuda_sim PRIVATE OPFORGE_CUDA_SIM OPFORGE_CUDA_MAX_BLOCKS=${OPFORGE_CUDA_SIM_MAX_BLOCKS})
# `#pragma unroll` is nvcc's.
target_compile_options(_cuda_sim PRIVATE ${OPFORGE_CPU_FLAGS} -Wno-unknown-pragmas)
if(OPFORGE_PCH)
  target_precompile_headers(_cuda_sim PRIVATE "${CMAKE_SOURCE_DIR}/kernels/include/opforge/core/precompiled.h")
  # Device code stays torch-free, as under nvcc; pybind11 wants Python.h first.
  set_source_files_properties(${_sim_wrappers} ${_sim_runtime} "${CMAKE_SOURCE_DIR}/kernels/cuda/sim/module.cpp"
    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endif()
if(OPFORGE_CUDA_SIM_SANITIZE)
  set(_sanitize -fsanitize=${OPFORGE_CUDA_SIM_SANITIZE} -fno-omit-frame-pointer -g1)  # line tables for the reports
  if(OPFORGE_CUDA_SIM_SANITIZE MATCHES "undefined")
    list(APPEND _sanitize -fno-sanitize-recover=all)
  endif()
  target_compile_options(_cuda_sim PRIVATE ${_sanitize})
  target_link_options(_cuda_sim PRIVATE -fsanitize=${OPFORGE_CUDA_SIM_SANITIZE})
  if(OPFORGE_CUDA_SIM_SANITIZE STREQUAL "thread")
    # The scheduler's bookkeeping is shared by all fibers of a block; its
    # happens-before edges are annotated instead (Note [CUDA simulation]).
    # -fno-sanitize=thread also drops __SANITIZE_THREAD__: OPFORGE_SIM_TSAN turns the annotations on.
    set_source_files_properties(${_sim_runtime} PROPERTIES COMPILE_OPTIONS "-fno-sanitize=thread"
      COMPILE_DEFINITIONS OPFORGE_SIM_TSAN)
  endif()
endif()
# Sanitized builds put the module aside (scripts/sanitize_cuda.sh loads it by path).
set(OPFORGE_CUDA_SIM_OUTPUT_DIR "${CMAKE_SOURCE_DIR}/opforge" CACHE PATH "Where opforge._cuda_sim is written")
if(SKBUILD)
  install(TARGETS _cuda_sim LIBRARY DESTINATION opforge)
else()
  set_target_properties(_cuda_sim PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${OPFORGE_CUDA_SIM_OUTPUT_DIR}")
endif()
