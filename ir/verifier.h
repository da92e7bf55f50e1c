#pragma once
/// Whole-fusion consistency checks, run by FusionDefinition::finalize() and the parser.

namespace widefuse {

class Fusion;

/// Checks SSA order, every expression's type against its op's rules, and the alias table.
/// Throws Error naming the first offending value.
void verify(const Fusion& fusion);

} // namespace widefuse
