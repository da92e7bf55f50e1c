#pragma once
/// The differential fuzzer's data: a generated fusion with the arguments it runs on, and the
/// figures a campaign reports.

#include "ir/arguments.h"
#include "ir/fusion.h"

#include <llvm/ADT/SmallVector.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace widefuse::fuzz {

/// The dtypes before complex ones, in kAllDataTypes' order: the generator draws among these
/// (and turns some f32/f64 into c64/c128 from a stream of its own).
/// Columns of a row segment in the fuzzer's runs: the shortest, so that its rows past 32
/// columns are split into segments (docs/reductions.md §9).
inline constexpr int64_t kFuzzRowSegmentColumns = 32;

inline constexpr DataType kRealDataTypes[] = {
    DataType::Bool,          DataType::Int8,        DataType::Int16,         DataType::Int32,
    DataType::Int64,         DataType::UInt8,       DataType::UInt16,        DataType::UInt32,
    DataType::Half,          DataType::BFloat16,    DataType::Float,         DataType::Double,
    DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float8_e8m0fnu};

/// The argument of one fusion input. Kept by input name, so that a reduced fusion (fewer
/// inputs) still finds the same values for the inputs it keeps.
struct InputData {
  bool isScalar = false;
  ScalarArgument scalar = 0.0;
  DataType dtype = DataType::Float;
  /// Run-time shape and strides (elements) of a tensor argument.
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<int64_t, 4> strides;
  /// Backing memory: every element the strides address, plus the gaps between them (random
  /// too; a kernel that writes a gap is caught by the comparison of the whole buffer).
  std::vector<std::byte> storage;
};

/// One generated fusion and its arguments.
struct FuzzCase {
  std::unique_ptr<Fusion> fusion;
  std::map<std::string, InputData> inputs;
};

/// Why the generator left a case or a piece of one out. Counted, never silent.
struct GeneratorStats {
  uint64_t builtExprs = 0;
  /// Op applications the typing rules rejected (widefuse::Error from the builder).
  uint64_t rejectedOps = 0;
  /// Whole cases the reference evaluator rejected (bad arguments; a generator limitation).
  uint64_t rejectedCases = 0;
  /// Computed float operands of signbit, copysign and bitcast whose NaNs were replaced (their
  /// signs are unspecified).
  uint64_t nanSignGuards = 0;
  /// Plain outputs of a lower rank than their component's domain (the segmenter splits it).
  uint64_t narrowOutputs = 0;
  /// Reductions drawn, those read by a pointwise op right away (a later phase), those over
  /// values of several components, and the max/min drawn as sum because their operands have
  /// no element at run time (tests/fuzz/reductions.h).
  uint64_t reductions = 0;
  uint64_t reductionsRead = 0;
  uint64_t reductionsAcross = 0;
  uint64_t emptyMaxMin = 0;
  /// Reductions over rows longer than a segment (kFuzzRowSegmentColumns).
  uint64_t segmentedRows = 0;
  /// Cases whose fusion runs in two or more phases (a value reads a reduction's result).
  uint64_t multiPhaseCases = 0;
  /// "sum/tensor", "max/global", ...: the op and scope pairs drawn.
  std::set<std::string> reductionForms;
  std::set<std::string> opsCovered;
  std::set<std::string> dtypesCovered;
  std::set<std::string> castPairs;

  /// Adds another case's figures to these.
  void add(const GeneratorStats& other) {
    builtExprs += other.builtExprs;
    rejectedOps += other.rejectedOps;
    rejectedCases += other.rejectedCases;
    nanSignGuards += other.nanSignGuards;
    narrowOutputs += other.narrowOutputs;
    reductions += other.reductions;
    reductionsRead += other.reductionsRead;
    reductionsAcross += other.reductionsAcross;
    emptyMaxMin += other.emptyMaxMin;
    segmentedRows += other.segmentedRows;
    multiPhaseCases += other.multiPhaseCases;
    reductionForms.insert(other.reductionForms.begin(), other.reductionForms.end());
    opsCovered.insert(other.opsCovered.begin(), other.opsCovered.end());
    dtypesCovered.insert(other.dtypesCovered.begin(), other.dtypesCovered.end());
    castPairs.insert(other.castPairs.begin(), other.castPairs.end());
  }
};

} // namespace widefuse::fuzz
