#pragma once
/// Emits the C++ of one body of a kernel: its member-table entry, the values computed once
/// per chunk, the element function (one statement per IR expression) and the chunk loop.

#include "scheduler/kernel_plan.h"

#include <string>

namespace widefuse {

/// The member-table entry struct of `body`, with static_asserts pinning the plan's offsets.
std::string emitBodyEntry(const KernelPlan& plan, const BodyPlan& body);

/// The body's device functions: prologue (per-chunk values), element function and chunk
/// function `<body>_chunk(params, entry, member, chunk)`. Needs the parameter block type.
std::string emitBodyFunctions(const KernelPlan& plan, const BodyPlan& body);

/// The C++ type of the kernel's parameter block and of one table entry.
std::string parameterTypeName(const KernelPlan& plan);
std::string entryTypeName(const KernelPlan& plan);
/// The C++ type of one body's entry.
std::string memberTypeName(const BodyPlan& body);

} // namespace widefuse
