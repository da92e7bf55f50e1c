#pragma once
/// Codebooks: the sorted tables of values that low-bit optimizer state stores codes into
/// (docs/ir_reference.md, code_value and nearest_code). Each is built exactly as torchao and
/// bitsandbytes build theirs, so that a code means the same value here and there.

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// A named table of codes; None on every op but code_value and nearest_code.
enum class Codebook : uint8_t {
  None,
  Dynamic8Signed,   ///< 256 entries, [-0.99296875, 1]: 8-bit first moments
  Dynamic8Unsigned, ///< 256 entries, [0, 1]: 8-bit second moments
  Dynamic4Signed,   ///< 16 entries, [-0.8875, 1]: 4-bit first moments
  Linear4Unsigned,  ///< 16 entries k/16 for k = 1..16, no zero: 4-bit second moments
};

/// Every codebook but None, in enum order.
inline constexpr Codebook kAllCodebooks[] = {Codebook::Dynamic8Signed, Codebook::Dynamic8Unsigned,
                                             Codebook::Dynamic4Signed, Codebook::Linear4Unsigned};

/// The codebook's name in the text form and the APIs ("dynamic8_signed").
llvm::StringRef codebookName(Codebook codebook);

/// Looks a codebook up by name; nullopt for an unknown one (and for "none").
std::optional<Codebook> parseCodebook(llvm::StringRef name);

/// The names of every codebook, for messages ("dynamic8_signed dynamic8_unsigned ...").
std::string codebookNames();

/// The table, sorted ascending; its size is a power of two (256 or 16).
llvm::ArrayRef<float> codebookValues(Codebook codebook);

/// The value of `code`: the entry at the code's low log2(size) bits.
float codeValue(Codebook codebook, uint64_t code);

/// The code of `x` as torchao rounds it: the largest c with table[c] <= x (0 when there is
/// none, NaN included), then c + 1 when x - table[c] >= (table[c + 1] - table[c]) * 0.5, in
/// f32. Ties go up.
uint8_t nearestCode(Codebook codebook, float x);

/// codeValue of each code.
std::vector<float> codeValues(Codebook codebook, llvm::ArrayRef<int64_t> codes);

/// nearestCode of each value.
std::vector<uint8_t> nearestCodes(Codebook codebook, llvm::ArrayRef<float> values);

} // namespace widefuse
