#pragma once
/// Runs a generated case on the reference evaluator and on the host backend in every
/// configuration, and compares every output and every updated input bit for bit.

#include "tests/fuzz/fuzz_case.h"

#include "runtime/fusion_executor.h"

#include <string>
#include <vector>

namespace widefuse::fuzz {

/// One way to run the host backend.
struct RunConfig {
  SegmentationMode mode = SegmentationMode::Batched;
  BlockOrder order;
  unsigned threads = 1;
  HostExecution execution = HostExecution::Verify;
  /// e.g. "batched/reverse/3 threads/fast".
  std::string name() const;
};

/// Every mode (per-component, batched, packed) x block order (forward, reverse, shuffled) x
/// thread count (1, 3) x host execution (verify, fast; the fast path's threads each take work
/// however small the case).
std::vector<RunConfig> allConfigs();

/// What a case did.
struct RunOutcome {
  enum class Kind {
    Pass,     ///< every configuration equals the reference (and the oracle agrees)
    Mismatch, ///< a configuration differs, throws, or the float64 oracle disagrees
    Rejected, ///< the reference evaluator rejected the case (a generator limitation)
  };
  Kind kind = Kind::Pass;
  /// The first difference: configuration, value, element, bits.
  std::string message;
  /// A short key of the failure's class (which check, which configuration kind), so that a
  /// reduction keeps looking at the same bug.
  std::string signature;
  /// Index in RunnerOptions::configs of the configuration that failed (-1: none, or the
  /// oracle).
  int configIndex = -1;
};

/// What runCase checks.
struct RunnerOptions {
  std::vector<RunConfig> configs = allConfigs();
  /// Also compare floating-point outputs with the float64 oracle (tests/fuzz/oracle.h).
  bool oracle = true;
};

/// Checks that the case's text form parses back to the same text (a mismatch "text form"
/// otherwise), then runs it everywhere and compares; never throws for a widefuse error of a
/// backend (that is a mismatch), only for a broken case.
RunOutcome runCase(const FuzzCase& fuzzCase, const RunnerOptions& options);

/// The arguments of `fusion`'s inputs from `inputs` (by name), on fresh copies of their
/// storage kept in `storage`.
std::vector<Argument> bindArguments(const Fusion& fusion,
                                    const std::map<std::string, InputData>& inputs,
                                    std::vector<std::vector<std::byte>>& storage);

} // namespace widefuse::fuzz
