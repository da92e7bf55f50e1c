#pragma once
/// The text form of a Fusion (see ir/parser.h for the grammar): what tools print, tests
/// compare, and users edit by hand.

#include <string>

namespace widefuse {

class Fusion;

/// Prints `fusion` in the text form: the header with its typed parameters, one assignment per
/// expression in fusion order with constants written inline as literals, the copy_ lines in
/// alias order, and `return` for plain outputs. parseFusion() reads it back to a fusion that
/// prints identically.
std::string printFusion(const Fusion& fusion);

} // namespace widefuse
