#include "tools/run_arguments.h"

#include "ir/error.h"
#include "tools/npy_file.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace widefuse {
namespace {

/// The smallest magnitude that rounds to infinity (round to nearest even) in a floating type:
/// the largest finite value plus half a unit in its last place.
double overflowThreshold(DataType dtype) {
  switch (dtype) {
  case DataType::Half:
    return 65520.0; // (2 - 2^-11) * 2^15
  case DataType::BFloat16:
    return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
  case DataType::Float:
    return std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
  default:
    return std::numeric_limits<double>::infinity();
  }
}

ScalarArgument parseInteger(llvm::StringRef text, DataType dtype, llvm::StringRef name) {
  // Python's int() accepts a leading '+'; getAsInteger does not.
  llvm::StringRef magnitude = text;
  bool negative = magnitude.consume_front("-");
  if (!negative)
    magnitude.consume_front("+");
  if (magnitude.empty() || magnitude.find_first_not_of("0123456789") != llvm::StringRef::npos)
    fail("scalar '{}' ({}): expected an integer, got '{}'", name.str(), shortName(dtype).str(),
         text.str());
  int64_t value = 0;
  if ((negative ? text : magnitude).getAsInteger(10, value))
    fail("scalar '{}' ({}): {} does not fit in {}", name.str(), shortName(dtype).str(), text.str(),
         shortName(dtype).str());
  auto [low, high] = integerRange(dtype);
  if (value < low || value > high)
    fail("scalar '{}' ({}): {} does not fit in {} ({}..{})", name.str(), shortName(dtype).str(),
         text.str(), shortName(dtype).str(), low, high);
  return value;
}

ScalarArgument parseFloating(llvm::StringRef text, DataType dtype, llvm::StringRef name) {
  std::string copy = text.str();
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  // strtod skips leading spaces; a value is accepted only when it is the whole text.
  if (copy.empty() || std::isspace(static_cast<unsigned char>(copy.front())) ||
      end != copy.c_str() + copy.size())
    fail("scalar '{}' ({}): expected a number, got '{}'", name.str(), shortName(dtype).str(),
         text.str());
  bool overflowed = errno == ERANGE && std::isinf(value);
  if (overflowed || (std::isfinite(value) && std::fabs(value) >= overflowThreshold(dtype)))
    fail("scalar '{}' ({}): {} does not fit in {} (it would become infinity)", name.str(),
         shortName(dtype).str(), text.str(), shortName(dtype).str());
  return value;
}

/// The usage hint for a missing or misplaced input.
std::string usageOf(const Value& input) {
  if (input.isTensor())
    return fmt::format("--input {}=FILE.npy ({})", input.name(), formatType(input));
  return fmt::format("--scalar {}=VALUE ({})", input.name(), formatType(input));
}

/// Indexes the pairs by name, rejecting repeats and names that are not inputs of this kind.
llvm::StringMap<std::string>
indexAssignments(const Fusion& fusion, llvm::ArrayRef<Assignment> assignments, bool tensors) {
  llvm::StringRef option = tensors ? "--input" : "--scalar";
  llvm::StringMap<std::string> byName;
  for (const Assignment& assignment : assignments) {
    const Value* value = fusion.lookup(assignment.name);
    if (!value || !value->isInput())
      fail("{} {}: fusion '{}' has no input named '{}'", option.str(), assignment.name,
           fusion.name(), assignment.name);
    if (value->isTensor() != tensors)
      fail("{} {}: '{}' is a {} input; give it as {}", option.str(), assignment.name,
           assignment.name, value->isTensor() ? "tensor" : "scalar", usageOf(*value));
    if (!byName.try_emplace(assignment.name, assignment.value).second)
      fail("{} {} is given twice", option.str(), assignment.name);
  }
  return byName;
}

} // namespace

Assignment parseAssignment(llvm::StringRef text, llvm::StringRef option) {
  auto [name, value] = text.split('=');
  if (name.size() == text.size() || name.empty() || value.empty())
    fail("{} expects NAME={}, got '{}'", option.str(), option == "--scalar" ? "VALUE" : "FILE.npy",
         text.str());
  return Assignment{name.str(), value.str()};
}

ScalarArgument parseScalarValue(llvm::StringRef text, DataType dtype, llvm::StringRef name) {
  if (dtype == DataType::Bool) {
    if (text == "true")
      return true;
    if (text == "false")
      return false;
    fail("scalar '{}' (b8): expected true or false, got '{}'", name.str(), text.str());
  }
  if (isInteger(dtype))
    return parseInteger(text, dtype, name);
  return parseFloating(text, dtype, name);
}

BoundArguments bindArguments(const Fusion& fusion, llvm::ArrayRef<Assignment> tensorInputs,
                             llvm::ArrayRef<Assignment> scalarInputs) {
  llvm::StringMap<std::string> files = indexAssignments(fusion, tensorInputs, true);
  llvm::StringMap<std::string> numbers = indexAssignments(fusion, scalarInputs, false);
  std::vector<std::string> missing;
  for (const Value* input : fusion.inputs())
    if (!(input->isTensor() ? files : numbers).count(input->name()))
      missing.push_back(usageOf(*input));
  if (!missing.empty())
    fail("fusion '{}' needs {}", fusion.name(), fmt::join(missing, ", "));

  // Scalars first: a typo in a number should not wait for large files to be read.
  llvm::ArrayRef<Value*> inputs = fusion.inputs();
  BoundArguments bound;
  bound.arguments.resize(inputs.size());
  bound.inputTensors.resize(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->isScalar())
      bound.arguments[i] = parseScalarValue(numbers.lookup(inputs[i]->name()), inputs[i]->dtype(),
                                            inputs[i]->name());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]->isTensor())
      continue;
    try {
      bound.tensors.push_back(readNpy(files.lookup(inputs[i]->name()), inputs[i]->dtype()));
    } catch (const Error& error) {
      fail("input '{}': {}", inputs[i]->name(), error.what());
    }
    bound.arguments[i] = bound.tensors.back().ref();
    bound.inputTensors[i] = &bound.tensors.back();
  }
  return bound;
}

} // namespace widefuse
