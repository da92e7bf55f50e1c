#pragma once
/// The Python form of a fusion: the definition nvFuser's Python printer would write for it
/// (`fd.define_tensor`, `fd.define_scalar`, `fd.ops.*`, `fd.add_output`), for either of
/// nvFuser's Python APIs, runnable against that API and against widefuse's Python frontend.
/// `repr(fd)` in Python returns the direct API's form, `fd.printout(api=...)` either.

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
/// The nvFuser Python API a printed definition is written for.
enum class PythonApi {
  /// `nvfuser_direct`, what nvFuser's bindings are since the legacy ones went (2026-01): `def
  /// nvfuser_fusion(fd : FusionDefinition) -> None :` first, values named tv<n> and c<n>, an
  /// output's layout as `fd.ops.stride_order`.
  Direct,
  /// The legacy `nvfuser` module: a blank line and `def nvfuser_fusion_id0(...)` first and a
  /// blank line last, values named T<n> and S<n>, vector entries as `fd.ops.at`, an output's
  /// layout as `add_output(..., stride_order=...)`.
  Legacy,
};

/// The API named `name`: "direct" or "legacy"; throws Error for any other name.
PythonApi parsePythonApi(llvm::StringRef name);

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

/// nvFuser's printout of `fusion` for `api`, in its layout (see PythonApi): the `def` line and
/// one line per definition (run it, then call the function on a FusionDefinition, as
/// nvFuser's tests do; the fusion's name is not part of it, as nvFuser's definitions have
/// none). Values are renamed in definition order as nvFuser's printer does. Untyped number
/// literals are written inline, so that the printout rebuilds the very same fusion (the
/// direct API takes them as Python numbers; the legacy API's ops wanted define_scalar
/// constants instead). `outputCalls`, where given, are the add_output calls in the order they
/// were made (a value added twice is printed twice; the IR holds it once), after the in-place
/// updates that no call names (those the frontend adds itself); else every in-place update and
/// then every output is printed once. `vectorInputs` lists nvFuser's vector inputs
/// (define_vector(n)) as (first input, n): the IR holds their entries as n Int scalar inputs,
/// printed as the vector and each entry read from it.
std::string printPythonDefinition(const Fusion& fusion, llvm::ArrayRef<OutputCall> outputCalls = {},
                                  llvm::ArrayRef<VectorInput> vectorInputs = {},
                                  PythonApi api = PythonApi::Direct);
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
