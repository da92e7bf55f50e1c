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

/// Runs every file, each in a child process of this executable (`--replay-one FILE`), so that
/// a case crashing the backend is reported as failing (as the known bug its `expect` line
/// names, or as a failure) instead of ending the replay; true when each behaves as its
/// `expect` line says.
bool replayRegressions(const std::vector<std::string>& files);

/// Runs one file in this process (the child's work): true when it behaves as its `expect`
/// line says.
bool replayOne(const std::string& path);

} // namespace widefuse::fuzz
