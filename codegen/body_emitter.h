#pragma once
/// Emits the C++ of one body of a kernel: its member-table entry, the values computed once
/// per run of chunks, the element function (one statement per IR expression) and the loops.

#include "codegen/code_writer.h"
#include "scheduler/kernel_plan.h"

#include <string>

namespace widefuse {

/// Writes the member-table entry struct of `body`, with static_asserts pinning the plan's
/// offsets.
void emitBodyEntry(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out);

/// Writes the body's functions: the prologue (values computed once per run of chunks), the
/// element function, the loops over a run's elements, the deferred writes, and
/// `<body>_run(params, entry, member, first, end)` with its host twin `<body>_host_run`.
/// Needs the parameter block type.
void emitBodyFunctions(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out);

/// The C++ type of the kernel's parameter block and of one table entry.
std::string parameterTypeName(const KernelPlan& plan);
std::string entryTypeName(const KernelPlan& plan);
/// The C++ type of one body's entry.
std::string memberTypeName(const BodyPlan& body);

} // namespace widefuse
