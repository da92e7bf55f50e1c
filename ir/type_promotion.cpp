#include "ir/type_promotion.h"

#include "ir/value.h"

#include <optional>

namespace widefuse {
namespace {

/// PyTorch's combine_categories: `higher` is the result of a higher-priority group.
std::optional<DataType> combine(std::optional<DataType> higher, std::optional<DataType> lower) {
  if (!higher)
    return lower;
  if (!lower || isComplex(*higher))
    return higher;
  if (isComplex(*lower)) // a float keeps its precision: f64 tensor * 1j is c128
    return isFloatingPoint(*higher) ? complexTypeOf(*higher) : *lower;
  if (isFloatingPoint(*higher))
    return higher;
  if (*higher == DataType::Bool || isFloatingPoint(*lower))
    return promoteTypes(*higher, *lower);
  return higher;
}

void accumulate(std::optional<DataType>& group, DataType type) {
  group = group ? promoteTypes(*group, type) : type;
}

/// The type a scalar stands for beside tensors: a Python number of its category (torch's
/// defaults: f32 for a float, c64 for a complex).
DataType asPythonNumber(DataType type) {
  switch (categoryOf(type)) {
  case TypeCategory::Bool:
    return DataType::Bool;
  case TypeCategory::Integer:
    return DataType::Int64;
  case TypeCategory::Floating:
    return DataType::Float;
  case TypeCategory::Complex:
    return DataType::ComplexFloat;
  }
  return type;
}

} // namespace

DataType promoteOperandTypes(llvm::ArrayRef<const Value*> operands, bool besideTensor) {
  std::optional<DataType> ranked, zeroDim, scalars, weakScalars;
  bool anyTensor = besideTensor;
  for (const Value* operand : operands) {
    if (operand->isTensor()) {
      anyTensor = true;
      accumulate(operand->rank() > 0 ? ranked : zeroDim, operand->dtype());
    } else if (operand->isWeak()) {
      accumulate(weakScalars, operand->dtype());
    } else {
      accumulate(scalars, operand->dtype());
    }
  }
  if (!anyTensor)
    return *combine(scalars, weakScalars);
  std::optional<DataType> wrapped;
  for (std::optional<DataType> group : {scalars, weakScalars})
    if (group)
      accumulate(wrapped, asPythonNumber(*group));
  return *combine(ranked, combine(zeroDim, wrapped));
}

} // namespace widefuse
