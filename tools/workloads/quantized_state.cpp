#include "tools/workloads/quantized_state.h"

#include "ir/codebook.h"
#include "ir/error.h"

#include <fmt/format.h>

namespace widefuse::optim {
namespace {

/// torchao's floor on a block's absmax, fp8's largest finite value, and its threshold.
constexpr double kMinAbsmax = 1e-12;
constexpr double kFp8Max = 448.0;
constexpr int64_t kMinQuantizedElements = 4096;

Codebook codebookOf(const StateFormat& format, bool isSigned) {
  if (format.kind == StateFormatKind::Int4)
    return isSigned ? Codebook::Dynamic4Signed : Codebook::Linear4Unsigned;
  return isSigned ? Codebook::Dynamic8Signed : Codebook::Dynamic8Unsigned;
}

/// `perBlock` read by every element of its block of `like`'s shape.
Val expanded(Val perBlock, Val like, int64_t block) {
  llvm::SmallVector<ShapeEntry, 4> shape;
  for (int64_t extent : like.value()->extents())
    shape.push_back(extent);
  return expand_blocks(perBlock, shape, Blocks{block});
}

/// 4 for even elements (the high nibble), 0 for odd ones.
Val nibbleShift(Val like) {
  Val index = element_index(like);
  return cast(bitwise_xor(bitwise_and(index, 1), 1), DataType::Int32) * 4;
}

/// Each element's code: int4 takes its nibble of its pair's byte.
Val codesOf(const StateFormat& format, Val codes, Val like) {
  if (format.kind != StateFormatKind::Int4)
    return codes;
  Val pair = cast(expanded(codes, like, 2), DataType::Int32);
  return bitwise_and(shift_right(pair, nibbleShift(like)), 15);
}

} // namespace

llvm::StringRef stateFormatName(StateFormatKind kind) {
  switch (kind) {
  case StateFormatKind::Int8:
    return "int8";
  case StateFormatKind::Int4:
    return "int4";
  case StateFormatKind::Fp8:
    return "fp8";
  }
  throw InternalError(fmt::format("unknown StateFormatKind {}", int(kind)));
}

std::optional<StateFormatKind> parseStateFormatKind(llvm::StringRef name) {
  for (StateFormatKind kind : {StateFormatKind::Int8, StateFormatKind::Int4, StateFormatKind::Fp8})
    if (stateFormatName(kind) == name)
      return kind;
  return std::nullopt;
}

int64_t defaultBlockSize(StateFormatKind kind) {
  return kind == StateFormatKind::Int4 ? 128 : 256;
}

void validateStateFormat(const StateFormat& format) {
  int64_t block = format.blockSize;
  if (block < 1 || block > 1024 || (block & (block - 1)) != 0)
    fail("block size {}: a block is a power of two of elements from 1 to 1024", block);
  if (format.kind == StateFormatKind::Int4 && block < 2)
    fail("block size 1: int4 packs two codes per byte, so its blocks have 2 elements or more");
}

bool quantizesParameter(const StateFormat& format, int64_t elements) {
  return elements >= kMinQuantizedElements && elements % format.blockSize == 0;
}

DataType codesDtype(const StateFormat& format) {
  return format.kind == StateFormatKind::Fp8 ? DataType::Float8_e4m3fn : DataType::UInt8;
}

Shape codesShape(const StateFormat& format, const Shape& shape) {
  if (format.kind != StateFormatKind::Int4)
    return shape;
  return {totalElements({shape}) / 2};
}

int64_t quantizedBytes(const StateFormat& format, int64_t elements) {
  int64_t codes = format.kind == StateFormatKind::Int4 ? elements / 2 : elements;
  return codes + 4 * (elements / format.blockSize);
}

Val readQuantized(const StateFormat& format, Val codes, Val scale, bool isSigned, Val like) {
  Val values = format.kind == StateFormatKind::Fp8
                   ? cast(codes, DataType::Float)
                   : code_value(codesOf(format, codes, like), codebookOf(format, isSigned));
  return values * expanded(scale, like, format.blockSize);
}

void storeQuantized(FusionDefinition& fd, const StateFormat& format, Val value, Val codes,
                    Val scale, bool isSigned, Val skip) {
  const int64_t block = format.blockSize;
  Val magnitude = maximum(abs(value), kMinAbsmax);
  if (format.kind == StateFormatKind::Fp8) // max(|x| / 448) is max(|x|) / 448
    magnitude = truediv(magnitude, kFp8Max);
  if (skip) // each element offers the old scale: the block keeps it
    magnitude = where(skip, expanded(scale, value, block), magnitude);
  Val newScale = max(magnitude, Blocks{block});
  Val normalised = truediv(value, expanded(newScale, value, block));
  Val newCodes = format.kind == StateFormatKind::Fp8
                     ? cast(normalised, DataType::Float8_e4m3fn)
                     : nearest_code(normalised, codebookOf(format, isSigned));
  if (skip)
    newCodes = where(skip, codesOf(format, codes, value), newCodes);
  if (format.kind == StateFormatKind::Int4) // each pair's byte: a second level of blocks
    newCodes = sum(shift_left(cast(newCodes, DataType::Int32), nibbleShift(value)), Blocks{2});
  fd.copy_(newCodes, codes);
  fd.copy_(newScale, scale);
}

} // namespace widefuse::optim
