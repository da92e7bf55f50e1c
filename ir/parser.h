#pragma once
/// Reads the text form of a fusion. The grammar (anyone may write it by hand):
///
///   # comment to end of line
///   fusion adam_step(p: f32[1024, 1024], g: f32[1024, ?]{stride_order=[0, 1]},
///                    step: f32[], lr: f64) {
///     step1 = add(step, 1.0)                      # 1.0 is a weak (Python-number) literal
///     m1 = add(mul(g, lr), cast(step1, f32))      # nested calls become their own values
///     z = broadcast_in_dim(g, [8, 1024, ?], [1, 2]) # shape, then dims; ? is symbolic
///     h = set(2:i32)                              # typed constant
///     copy_(step1, step)                          # in-place update of an input
///     return m1                                   # plain outputs; last statement
///   }
///
/// Parameters typed `dtype[extents]` (with an optional `{stride_order=[..],
/// contiguity=[..]}` layout) are tensor inputs; a bare dtype is a runtime scalar input.

#include "ir/fusion.h"

#include <llvm/ADT/StringRef.h>

#include <memory>

namespace widefuse {

/// Parses and verifies one fusion. Every op goes through buildOp, so the result is checked
/// exactly like one built with FusionDefinition. Throws Error whose message starts with
/// `sourceName:line:column: ` for syntax, name, type and shape errors.
std::unique_ptr<Fusion> parseFusion(llvm::StringRef text, llvm::StringRef sourceName = "<input>");

} // namespace widefuse
