#pragma once
/// Literals of the text form: the syntax of numbers and the payload a typed constant
/// (`2.5:f32`, `3:i8`, `true:b8`) keeps. The parser adds the location to their errors.

#include "ir/data_type.h"
#include "ir/value.h"

#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// A number token (Python syntax: digits [. digits] [e [+-] digits], or . digits ...),
/// negated when a minus precedes it: int64 without '.' or exponent, else double. Throws Error
/// for a malformed number, an integer past 64 bits or a double past f64's range.
ConstantValue numberLiteral(llvm::StringRef token, bool negative);

/// The payload `value:type` keeps (`text` is the literal as written, for messages). Throws
/// Error for a literal the dtype cannot hold exactly: out of range, the wrong kind (true for
/// an integer dtype), or a complex dtype (written complex(re, im)).
ConstantValue typedLiteral(const ConstantValue& value, DataType type, llvm::StringRef text);

} // namespace widefuse
