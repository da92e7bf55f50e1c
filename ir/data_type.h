#pragma once
/// The element types of widefuse tensors and scalars, and facts about them.

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace widefuse {

/// Element type of a tensor or scalar. The order is the order of `allDataTypes()`.
enum class DataType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  Half,
  BFloat16,
  Float,
  Double,
  Float8_e4m3fn,  ///< fp8, 4 exponent and 3 mantissa bits, finite only (no infinity)
  Float8_e5m2,    ///< fp8, 5 exponent and 2 mantissa bits (IEEE-like, with infinities)
  Float8_e8m0fnu, ///< fp8, 8 exponent bits only: powers of two, unsigned, no zero
  ComplexFloat,   ///< a pair of f32 (real, imaginary), as torch.complex64
  ComplexDouble,  ///< a pair of f64 (real, imaginary), as torch.complex128
};

/// Every data type, for iteration in tests and tables.
inline constexpr DataType kAllDataTypes[] = {
    DataType::Bool,          DataType::Int8,         DataType::Int16,
    DataType::Int32,         DataType::Int64,        DataType::UInt8,
    DataType::UInt16,        DataType::UInt32,       DataType::Half,
    DataType::BFloat16,      DataType::Float,        DataType::Double,
    DataType::Float8_e4m3fn, DataType::Float8_e5m2,  DataType::Float8_e8m0fnu,
    DataType::ComplexFloat,  DataType::ComplexDouble};

/// The short name used by the text form: b8 i8 i16 i32 i64 u8 u16 u32 f16 bf16 f32 f64
/// f8e4m3fn f8e5m2 f8e8m0fnu c64 c128.
llvm::StringRef shortName(DataType type);
/// Parses a short name; nullopt when it names no data type.
std::optional<DataType> parseDataType(llvm::StringRef name);
/// Size of one element in bytes.
unsigned byteSize(DataType type);
/// True for half, bfloat16, float, double and the fp8 types.
bool isFloatingPoint(DataType type);
/// True for the signed and unsigned integer types (not bool).
bool isInteger(DataType type);
/// True for int8..int64.
bool isSignedInteger(DataType type);
/// True for uint8..uint32.
bool isUnsignedInteger(DataType type);
/// True for half, bfloat16 and the fp8 types: storage types, computed in float and rounded.
bool isNarrowFloat(DataType type);
/// True for the three fp8 types (one byte each).
bool isFloat8(DataType type);
/// True for c64 and c128.
bool isComplex(DataType type);
/// The type of a complex type's real and imaginary parts (f32, f64); other types unchanged.
DataType complexPartType(DataType type);
/// The complex type whose parts hold `type`: c128 for f64 (and c128), c64 for every other
/// floating type and c64.
DataType complexTypeOf(DataType type);
/// The type arithmetic on `type` is carried out in: float for half/bfloat16/fp8, else `type`.
DataType computeType(DataType type);

/// Smallest and largest value of an integer type (int64's range for other types).
std::pair<int64_t, int64_t> integerRange(DataType type);

/// Category used by type promotion: bool < integer < floating point < complex.
enum class TypeCategory : uint8_t { Bool, Integer, Floating, Complex };
/// The promotion category of a data type.
TypeCategory categoryOf(DataType type);

/// PyTorch's promote_types for two data types (e.g. int32 + half -> half, half + bfloat16 ->
/// float, uint8 + int8 -> int16, uint32 + int32 -> int64). fp8 types, which torch refuses to
/// promote with any other type, promote as nvFuser's promoteType does: like half, so fp8 with
/// another narrow-float type is float, and fp8 with an integer or bool stays fp8.
/// Complex with anything is complex, wide enough for both (c64 + f64 = c128), as in torch.
DataType promoteTypes(DataType a, DataType b);

} // namespace widefuse
