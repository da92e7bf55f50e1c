#include "ir/data_type.h"

#include "ir/error.h"

#include <algorithm>

namespace widefuse {

llvm::StringRef shortName(DataType type) {
  switch (type) {
  case DataType::Bool:
    return "b8";
  case DataType::Int8:
    return "i8";
  case DataType::Int16:
    return "i16";
  case DataType::Int32:
    return "i32";
  case DataType::Int64:
    return "i64";
  case DataType::UInt8:
    return "u8";
  case DataType::UInt16:
    return "u16";
  case DataType::UInt32:
    return "u32";
  case DataType::Half:
    return "f16";
  case DataType::BFloat16:
    return "bf16";
  case DataType::Float:
    return "f32";
  case DataType::Double:
    return "f64";
  case DataType::Float8_e4m3fn:
    return "f8e4m3fn";
  case DataType::Float8_e5m2:
    return "f8e5m2";
  case DataType::Float8_e8m0fnu:
    return "f8e8m0fnu";
  case DataType::ComplexFloat:
    return "c64";
  case DataType::ComplexDouble:
    return "c128";
  }
  WF_UNREACHABLE("unknown data type {}", static_cast<int>(type));
}

std::optional<DataType> parseDataType(llvm::StringRef name) {
  for (DataType type : kAllDataTypes)
    if (shortName(type) == name)
      return type;
  return std::nullopt;
}

unsigned byteSize(DataType type) {
  switch (type) {
  case DataType::Bool:
  case DataType::Int8:
  case DataType::UInt8:
  case DataType::Float8_e4m3fn:
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return 1;
  case DataType::Int16:
  case DataType::UInt16:
  case DataType::Half:
  case DataType::BFloat16:
    return 2;
  case DataType::Int32:
  case DataType::UInt32:
  case DataType::Float:
    return 4;
  case DataType::Int64:
  case DataType::Double:
  case DataType::ComplexFloat:
    return 8;
  case DataType::ComplexDouble:
    return 16;
  }
  WF_UNREACHABLE("unknown data type {}", static_cast<int>(type));
}

bool isFloatingPoint(DataType type) {
  return type == DataType::Half || type == DataType::BFloat16 || type == DataType::Float ||
         type == DataType::Double || isFloat8(type);
}

bool isFloat8(DataType type) {
  return type == DataType::Float8_e4m3fn || type == DataType::Float8_e5m2 ||
         type == DataType::Float8_e8m0fnu;
}

bool isComplex(DataType type) {
  return type == DataType::ComplexFloat || type == DataType::ComplexDouble;
}

DataType complexPartType(DataType type) {
  if (type == DataType::ComplexFloat)
    return DataType::Float;
  return type == DataType::ComplexDouble ? DataType::Double : type;
}

DataType complexTypeOf(DataType type) {
  return type == DataType::Double || type == DataType::ComplexDouble ? DataType::ComplexDouble
                                                                     : DataType::ComplexFloat;
}

bool isSignedInteger(DataType type) {
  return type == DataType::Int8 || type == DataType::Int16 || type == DataType::Int32 ||
         type == DataType::Int64;
}

bool isUnsignedInteger(DataType type) {
  return type == DataType::UInt8 || type == DataType::UInt16 || type == DataType::UInt32;
}

bool isInteger(DataType type) {
  return isSignedInteger(type) || isUnsignedInteger(type);
}

bool isNarrowFloat(DataType type) {
  return type == DataType::Half || type == DataType::BFloat16 || isFloat8(type);
}

DataType computeType(DataType type) {
  return isNarrowFloat(type) ? DataType::Float : type;
}

std::pair<int64_t, int64_t> integerRange(DataType type) {
  switch (type) {
  case DataType::Int8:
    return {INT8_MIN, INT8_MAX};
  case DataType::Int16:
    return {INT16_MIN, INT16_MAX};
  case DataType::Int32:
    return {INT32_MIN, INT32_MAX};
  case DataType::UInt8:
    return {0, UINT8_MAX};
  case DataType::UInt16:
    return {0, UINT16_MAX};
  case DataType::UInt32:
    return {0, UINT32_MAX};
  default:
    return {INT64_MIN, INT64_MAX};
  }
}

TypeCategory categoryOf(DataType type) {
  if (type == DataType::Bool)
    return TypeCategory::Bool;
  if (isComplex(type))
    return TypeCategory::Complex;
  return isFloatingPoint(type) ? TypeCategory::Floating : TypeCategory::Integer;
}

namespace {

DataType signedOfWidth(unsigned width) {
  switch (width) {
  case 1:
    return DataType::Int8;
  case 2:
    return DataType::Int16;
  case 4:
    return DataType::Int32;
  default:
    return DataType::Int64;
  }
}

DataType unsignedOfWidth(unsigned width) {
  switch (width) {
  case 1:
    return DataType::UInt8;
  case 2:
    return DataType::UInt16;
  default:
    return DataType::UInt32;
  }
}

/// Smallest integer type holding every value of both integer types.
DataType promoteIntegers(DataType a, DataType b) {
  unsigned width = std::max(byteSize(a), byteSize(b));
  if (isSignedInteger(a) == isSignedInteger(b))
    return isSignedInteger(a) ? signedOfWidth(width) : unsignedOfWidth(width);
  DataType signedType = isSignedInteger(a) ? a : b;
  DataType unsignedType = isSignedInteger(a) ? b : a;
  if (byteSize(signedType) > byteSize(unsignedType))
    return signedType;
  return signedOfWidth(std::min(8u, 2 * byteSize(unsignedType)));
}

} // namespace

DataType promoteTypes(DataType a, DataType b) {
  if (a == b)
    return a;
  if (a == DataType::Bool)
    return b;
  if (b == DataType::Bool)
    return a;
  if (isComplex(a) || isComplex(b)) {
    bool wide = a == DataType::ComplexDouble || b == DataType::ComplexDouble ||
                a == DataType::Double || b == DataType::Double;
    return wide ? DataType::ComplexDouble : DataType::ComplexFloat;
  }
  bool aFloat = isFloatingPoint(a), bFloat = isFloatingPoint(b);
  if (aFloat && bFloat) {
    if (isNarrowFloat(a) && isNarrowFloat(b))
      return DataType::Float; // half + bfloat16, fp8 + half, e4m3fn + e5m2 (nvFuser's rule)
    return byteSize(a) >= byteSize(b) ? a : b;
  }
  if (aFloat)
    return a;
  if (bFloat)
    return b;
  return promoteIntegers(a, b);
}

} // namespace widefuse
