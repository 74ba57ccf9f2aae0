#pragma once
// Precompiled header for every C++ (not .cu) translation unit of the module.
// Parsing torch's headers costs ~8-9 s per file on a 2-core machine (C++20);
// precompiling them once makes each generated op file cost a few seconds.
// Only widely used, stable headers belong here (see CMakeLists.txt).
#include <ATen/TensorOperators.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Scalar.h>
#include <torch/library.h>
