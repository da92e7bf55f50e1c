#pragma once
/// C++ literals for IR constants, exact in the type they are used in.

#include "ir/value.h"

#include <string>

namespace widefuse {

/// The C++ name of a dtype in generated code (the prelude's typedefs: f32, bf16, i64, ...).
std::string cppType(DataType dtype);

/// A C++ expression of type `target` holding what the evaluator computes for `constant`: its
/// literal stored in the constant's own dtype, then converted to `target`. The conversion is
/// done here, exactly, so the kernel reads `0.9f` rather than a run-time conversion.
std::string constantLiteral(const Value& constant, DataType target);

} // namespace widefuse
