#pragma once
/// Codegen: a KernelPlan to the text of one CUDA C++ translation unit.

#include "scheduler/kernel_plan.h"

#include <string>

namespace widefuse {

/// The complete source of the plan's kernel: a header comment naming the fusion, classes
/// and members, the device prelude, the member-table and parameter types, one set of device
/// functions per body, and `extern "C" __global__ void <plan.name>(params)`. A pure function:
/// the same plan always gives the same text (the compile cache keys on it).
std::string emitCuda(const KernelPlan& plan);

} // namespace widefuse
