#pragma once
/// Automatic reduction of a failing case: drops expressions, copy_ lines, outputs, inputs and
/// the operands of global reductions of its text form while the same failure persists.

#include "tests/fuzz/runner.h"

#include <functional>
#include <string>

namespace widefuse::fuzz {

/// A reduced case: its text form and the failure it still shows.
struct Reduction {
  std::string text;
  RunOutcome outcome;
  unsigned candidatesTried = 0;
};

/// Reduces `failing` (which fails with `failure` under `options`). Candidates are the text
/// form with lines, return values, parameters or operands of a reduction over several
/// removed (a reduction keeps one operand at least, so it stays valid); one that does not parse is
/// skipped, one that still fails with the same signature is kept. Arguments are found by input
/// name.
Reduction reduceCase(const FuzzCase& failing, const RunOutcome& failure,
                     const RunnerOptions& options);

} // namespace widefuse::fuzz
