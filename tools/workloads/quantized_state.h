#pragma once
/// Block-quantized optimizer state for the tools' Adam workload (`widefuse adam
/// --state-format`): torchao's 8-bit, 4-bit and FP8 formats, dequantized and requantized
/// inside the step, op for op as widefuse.optim's state_formats.py traces them (the library
/// is the reference; tests/python_frontend/test_optim_adam_structure.py checks that the two
/// fusions are structurally equal).
///
/// A quantized moment is two tensors: codes (u8 of the parameter's shape; f8e4m3fn for fp8;
/// int4: flat u8 bytes of two codes, the even element's high) and one f32 scale per block of
/// consecutive elements. Its value is `table[code] * scale` (fp8: `code * scale`); the step
/// stores a new value as the new absmax of each block (a block reduction in the same
/// kernel; fp8: absmax / 448) and each element's nearest code.

#include "ir/fusion_definition.h"
#include "tools/workloads/model_presets.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace widefuse::optim {

/// The three formats, as torchao names them in its optimizers' classes.
enum class StateFormatKind { Int8, Int4, Fp8 };

/// A format and its block: every `blockSize` consecutive elements share one scale.
struct StateFormat {
  StateFormatKind kind = StateFormatKind::Int8;
  int64_t blockSize = 256;
};

/// "int8", "int4" or "fp8".
llvm::StringRef stateFormatName(StateFormatKind kind);
/// The format a name gives, or nullopt.
std::optional<StateFormatKind> parseStateFormatKind(llvm::StringRef name);
/// torchao's default block: 256, 128 for int4.
int64_t defaultBlockSize(StateFormatKind kind);
/// Throws Error unless the block is a power of two from 1 to 1024 (and even for int4).
void validateStateFormat(const StateFormat& format);

/// torchao's rule: a parameter of `elements` has its moments quantized when it has at least
/// 4096 elements, a multiple of the block.
bool quantizesParameter(const StateFormat& format, int64_t elements);
/// The codes' dtype: u8, or f8e4m3fn for fp8.
DataType codesDtype(const StateFormat& format);
/// The codes' shape for a moment of `shape`: the same, or flat halves for int4.
Shape codesShape(const StateFormat& format, const Shape& shape);
/// Bytes of one quantized moment of `elements`: its codes and its f32 scales.
int64_t quantizedBytes(const StateFormat& format, int64_t elements);

/// The f32 value, of `like`'s shape, that `codes` and `scale` stand for (the signed map for
/// first moments, the unsigned one for second moments).
Val readQuantized(const StateFormat& format, Val codes, Val scale, bool isSigned, Val like);

/// Writes the f32 `value` into `codes` and `scale` when the step ends: each block's scale
/// from its new absmax, then each code. With `skip` (a step GradScaler skips), both keep
/// what they held.
void storeQuantized(FusionDefinition& fd, const StateFormat& format, Val value, Val codes,
                    Val scale, bool isSigned, Val skip);

} // namespace widefuse::optim
