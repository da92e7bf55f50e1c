#pragma once
/// Regression inputs of the fuzzer: reduced cases in the text form (tests/fuzz/regressions/),
/// run like generated cases. Comment lines give what the text form cannot:
///
///   # shape NAME: [3, 0]        run-time shape of input NAME (default: declared, ? -> 3)
///   # values-seed: 7            seed of the random argument values (default 1)
///   # expect: mismatch          a known, unfixed bug: the case must still fail (strict xfail;
///                               once it passes, the line must go)

#include <string>
#include <vector>

namespace widefuse::fuzz {

/// Runs every file; true when each behaves as its `expect` line says.
bool replayRegressions(const std::vector<std::string>& files);

} // namespace widefuse::fuzz
