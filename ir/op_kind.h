#pragma once
/// The kinds of operation in the IR and their static facts, generated from op_kinds.def.

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace widefuse {

/// One enumerator per op in op_kinds.def.
enum class OpKind : uint8_t {
#define WF_OP(Enum, name, arity, rule) Enum,
#define WF_REDUCTION_OP(Enum, name) Enum,
#include "ir/op_kinds.def"
};

/// How an op's operand types are checked and its result type derived.
enum class TypeRule : uint8_t {
  Arithmetic,     ///< numeric operands (no bool result); result is the promoted type
  FloatMath,      ///< result is the promoted type, or float when that is bool/integer
  TrueDivision,   ///< like FloatMath: integer division gives float (PyTorch's true divide)
  Predicate,      ///< any operand; result bool
  Comparison,     ///< operands compared in the promoted type; result bool
  Logical,        ///< operands read as truth values; result bool
  Bitwise,        ///< bool or integer operands; result is the promoted type
  Shift,          ///< integer operands; result is the promoted type
  Integer,        ///< integer operands (gcd); result is the promoted type
  Select,         ///< where(bool condition, a, b); result is the promotion of a and b
  FloatOnly,      ///< floating-point operands only; result is the promoted type
  SingleOrDouble, ///< the promoted type must be f32 or f64 (nextafter: f16 steps differ)
  Identity,       ///< result has the operand's type (set)
  Cast,           ///< result has the attribute type; value conversion
  Bitcast,        ///< result has the attribute type of the same width; bits reinterpreted
  Broadcast,      ///< result has the operand's type and the attribute shape
  Extent,         ///< size(t, dim): an i64 scalar, the run-time extent of a tensor dimension
  Position,       ///< element_index(t): i64 of t's shape, each element's row-major index in t
  BlockExpansion, ///< expand_blocks: the operand's type and the attribute shape; each block of
                  ///< B elements (in logical order) reads one operand element
  CodeLookup,     ///< code_value(code, codebook): an integer code's table entry; result f32
  CodeSearch,     ///< nearest_code(x, codebook): an f32 value's code in the table; result u8
  ComplexPart,    ///< real/imag: a complex operand's part type (real of a real is itself)
  MakeComplex,    ///< complex(re, im): f32 or f64 parts; result c64 or c128
  Reduction,      ///< sum max min any all: one or more tensors, a scope (ir/reduction.h)
};

/// Number of ops in the table.
inline constexpr unsigned kNumOpKinds = 0
#define WF_OP(Enum, name, arity, rule) +1
#define WF_REDUCTION_OP(Enum, name) +1
#include "ir/op_kinds.def"
    ;

/// The op's name in the text form and the APIs ("add", "broadcast_in_dim").
llvm::StringRef opName(OpKind op);
/// Number of value operands (attributes not counted); for a reduction, the least (1): it
/// takes one or more.
unsigned opArity(OpKind op);
/// True for the reductions (sum max min any all), whose operand count varies.
bool isReduction(OpKind op);
/// The typing rule of the op.
TypeRule opTypeRule(OpKind op);
/// True when the op is defined on complex operands (c64, c128); every other op rejects them.
bool acceptsComplex(OpKind op);
/// Looks an op up by its text name; nullopt for an unknown name.
std::optional<OpKind> parseOpKind(llvm::StringRef name);

} // namespace widefuse
