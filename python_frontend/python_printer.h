#pragma once
/// The Python form of a fusion: the definition nvFuser's Python printer would write for it
/// (`fd.define_tensor`, `fd.define_scalar`, `fd.ops.*`, `fd.add_output`), runnable against
/// widefuse's Python frontend. `repr(fd)` in Python returns it.

#include "ir/data_type.h"
#include "ir/op_kind.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace widefuse {

class Fusion;
class Value;

/// The `DataType` member the Python frontend names `type` by (nvFuser's names: Float, Int, ...).
llvm::StringRef pythonDataTypeName(DataType type);
/// The name of `op` under `fd.ops` (nvFuser's: `bitwise_left_shift` for shift_left).
llvm::StringRef pythonOpName(OpKind op);
/// A vector input of a Python definition: its first entry's input position, its size.
using VectorInput = std::pair<unsigned, unsigned>;

/// One `fd.add_output` call of a Python definition: a plain output of `value` (with its
/// `stride_order`, empty for row-major), or, where `alias` is not negative, the in-place update
/// `fd.add_output(source, destination)` of `fusion.aliases()[alias]`. A plain output need not
/// be one of the fusion's outputs: an output that returns an input's array (the aliased value,
/// or the written input itself) is printed but not computed.
struct OutputCall {
  const Value* value = nullptr;
  std::vector<int64_t> strideOrder;
  int64_t alias = -1;
};

/// nvFuser's printout of `fusion`, byte for byte in its layout: a blank line, `def
/// nvfuser_fusion_id0(fd : FusionDefinition) -> None :`, its lines, a blank line (run it, then
/// call the function on a FusionDefinition, as nvFuser's tests do; the fusion's name is not
/// part of it, as nvFuser's definitions have none). Values are renamed T0, S1, ... in
/// definition order as nvFuser's printer does. Untyped number literals are written inline, so
/// that the printout rebuilds the very same fusion (nvFuser's own ops take define_scalar
/// constants instead). `outputCalls`, where given, are the add_output calls in the order they
/// were made (a value added twice is printed twice; the IR holds it once), after the in-place
/// updates that no call names (those the frontend adds itself); else every in-place update and
/// then every output is printed once. `vectorInputs` lists nvFuser's vector inputs
/// (define_vector(n)) as (first input, n): the IR holds their entries as n Int scalar inputs,
/// printed as the vector and `fd.ops.at` of it.
std::string printPythonDefinition(const Fusion& fusion, llvm::ArrayRef<OutputCall> outputCalls = {},
                                  llvm::ArrayRef<VectorInput> vectorInputs = {});
/// True for the values the Python form writes inline as numbers (untyped literals, and
/// complex literals) rather than naming them T<n> / S<n>.
bool isWrittenInline(const Value& value);
/// True for a complex literal: `complex(re, im)` of two untyped float literals, the value a
/// Python complex number becomes in the frontend (weak, like the literals it is made of). The
/// Python form writes it inline as `complex(re, im)`.
bool isComplexLiteral(const Value& value);
/// True for the values implicit broadcasting inserted (their size and broadcast_in_dim):
/// the Python form leaves them out, as nvFuser's does, and names no T<n> / S<n> for them.
bool isLeftImplicit(const Value& value);

} // namespace widefuse
