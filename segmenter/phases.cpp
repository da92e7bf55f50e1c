#include "segmenter/phases.h"

#include "ir/error.h"
#include "ir/reduction.h"

#include <fmt/format.h>

#include <algorithm>

namespace widefuse {
namespace {

/// Levels (docs/segmenter.md 9.1): inputs and constants are 1, a pointwise value is the
/// latest of its operands, a reduction result is one after the level computing it.
struct Levels {
  std::vector<unsigned> ofValue;
  /// Per expression: the level a reduction is computed in (0 for other expressions).
  std::vector<unsigned> computedIn;
};

Levels levelsOf(const Fusion& fusion) {
  Levels levels;
  levels.ofValue.assign(fusion.numValues(), 1);
  levels.computedIn.assign(fusion.numExprs(), 0);
  for (const Expr* expr : fusion.exprList()) {
    unsigned latest = 1;
    for (const Value* operand : expr->operands())
      latest = std::max(latest, levels.ofValue[operand->id()]);
    for (const Value* extent : expr->attributes().broadcastExtents)
      if (extent)
        latest = std::max(latest, levels.ofValue[extent->id()]);
    if (isPhaseReduction(*expr)) {
      levels.computedIn[expr->id()] = latest;
      latest += 1;
    }
    levels.ofValue[expr->result()->id()] = latest;
  }
  return levels;
}

/// What the whole fusion asks of each level, and where each copy_ is written.
class LevelAssignment {
public:
  LevelAssignment(const Fusion& fusion)
      : fusion_(fusion), levels_(levelsOf(fusion)), live_(liveValues(fusion)) {
    for (const Alias& alias : fusion.aliases())
      writeLevel_.push_back(levels_.ofValue[alias.source->id()]);
    settleWrites();
  }

  unsigned count() const { return count_; }
  unsigned writeLevel(unsigned alias) const { return writeLevel_[alias]; }
  const Levels& levels() const { return levels_; }

  /// The level an output of the whole fusion is produced in: a reduction result in the level
  /// computing it, any other value in its own.
  unsigned outputLevel(const Value* output) const {
    const Expr* definition = output->definition();
    if (definition && isPhaseReduction(*definition))
      return levels_.computedIn[definition->id()];
    return levels_.ofValue[output->id()];
  }

  /// The values level `level` computes or reads, by id: the cones of its work, cut at the
  /// results of earlier levels (which it reads as inputs).
  std::vector<bool> cone(unsigned level) const {
    std::vector<bool> needed(fusion_.numValues(), false);
    std::vector<const Value*> stack;
    auto need = [&](const Value* value) {
      if (!needed[value->id()]) {
        needed[value->id()] = true;
        stack.push_back(value);
      }
    };
    for (const Expr* expr : fusion_.exprList())
      if (computes(*expr, level))
        need(expr->result());
    for (const Value* output : fusion_.outputs())
      if (outputLevel(output) == level)
        need(output);
    for (size_t a = 0; a < fusion_.aliases().size(); ++a)
      if (writeLevel_[a] == level) {
        need(fusion_.aliases()[a].source);
        need(fusion_.aliases()[a].destination);
      }
    while (!stack.empty()) {
      const Value* value = stack.back();
      stack.pop_back();
      const Expr* definition = value->definition();
      if (!definition || isEarlierResult(*value, level))
        continue;
      for (const Value* operand : definition->operands())
        need(operand);
      for (const Value* extent : definition->attributes().broadcastExtents)
        if (extent)
          need(extent);
    }
    return needed;
  }

  /// True when level `level` computes a reduction, writes a copy_ or returns an output.
  bool hasWork(unsigned level) const {
    for (const Expr* expr : fusion_.exprList())
      if (computes(*expr, level))
        return true;
    for (const Value* output : fusion_.outputs())
      if (outputLevel(output) == level)
        return true;
    return llvm::is_contained(writeLevel_, level);
  }

  /// True for a reduction whose result something reads, computed in `level`.
  bool computes(const Expr& expr, unsigned level) const {
    return isPhaseReduction(expr) && live_[expr.result()->id()] &&
           levels_.computedIn[expr.id()] == level;
  }

  /// A reduction result computed before `level`: an input there.
  bool isEarlierResult(const Value& value, unsigned level) const {
    const Expr* definition = value.definition();
    return definition && isPhaseReduction(*definition) &&
           levels_.computedIn[definition->id()] < level;
  }

private:
  /// The values an output or a copy_ source depends on, by id.
  static std::vector<bool> liveValues(const Fusion& fusion) {
    std::vector<bool> live(fusion.numValues(), false);
    for (const Value* output : fusion.outputs())
      live[output->id()] = true;
    for (const Alias& alias : fusion.aliases())
      live[alias.source->id()] = live[alias.destination->id()] = true;
    auto exprs = fusion.exprList();
    for (auto expr = exprs.rbegin(); expr != exprs.rend(); ++expr) {
      if (!live[(*expr)->result()->id()])
        continue;
      for (const Value* operand : (*expr)->operands())
        live[operand->id()] = true;
      for (const Value* extent : (*expr)->attributes().broadcastExtents)
        if (extent)
          live[extent->id()] = true;
    }
    return live;
  }

  /// Moves each copy_ to the last level that reads its destination, until nothing moves: a
  /// write only moves later, and the level count bounds it.
  void settleWrites() {
    for (bool moved = true; moved;) {
      moved = false;
      count_ = 1;
      for (const Expr* expr : fusion_.exprList())
        if (computes(*expr, levels_.computedIn[expr->id()]))
          count_ = std::max(count_, levels_.computedIn[expr->id()]);
      for (const Value* output : fusion_.outputs())
        count_ = std::max(count_, outputLevel(output));
      for (unsigned level : writeLevel_)
        count_ = std::max(count_, level);
      for (unsigned level = count_; level > 1; --level) {
        std::vector<bool> reads = cone(level);
        for (size_t a = 0; a < writeLevel_.size(); ++a)
          if (writeLevel_[a] < level && reads[fusion_.aliases()[a].destination->id()]) {
            writeLevel_[a] = level;
            moved = true;
          }
      }
    }
  }

  const Fusion& fusion_;
  Levels levels_;
  std::vector<bool> live_;
  std::vector<unsigned> writeLevel_;
  unsigned count_ = 1;
};

} // namespace

bool PhasePlan::computedBefore(const Value& value, unsigned phase) const {
  const Expr* definition = value.definition();
  if (!definition || !isPhaseReduction(*definition))
    return false;
  unsigned computed = reductionPhase[definition->id()];
  return computed != kNoPhase && computed < phase;
}

PhasePlan planPhases(const Fusion& fusion) {
  // Most fusions (every optimizer step without a clip) have no reduction: one phase, at the
  // cost of one look at each expression.
  if (!hasReductions(fusion)) {
    PhasePlan plan;
    plan.reductionPhase.assign(fusion.numExprs(), kNoPhase);
    plan.aliasPhase.assign(fusion.aliases().size(), 0);
    plan.outputPhase.assign(fusion.outputs().size(), 0);
    return plan;
  }
  LevelAssignment assignment(fusion);
  // Levels that compute, write or return nothing are no phase: number the others from 0.
  std::vector<unsigned> phaseOfLevel(assignment.count() + 1, kNoPhase);
  PhasePlan plan;
  plan.count = 0;
  for (unsigned level = 1; level <= assignment.count(); ++level)
    if (assignment.hasWork(level)) {
      phaseOfLevel[level] = plan.count++;
      // What no output or copy_ needs is not computed: a dead value may read a reduction
      // that is not computed either.
      plan.needs.push_back(assignment.cone(level));
    }
  if (plan.count == 0) { // nothing to do: one phase that computes nothing
    plan.count = 1;
    plan.needs.emplace_back(fusion.numValues(), false);
  }
  plan.reductionPhase.assign(fusion.numExprs(), kNoPhase);
  for (const Expr* expr : fusion.exprList())
    if (assignment.computes(*expr, assignment.levels().computedIn[expr->id()]))
      plan.reductionPhase[expr->id()] = phaseOfLevel[assignment.levels().computedIn[expr->id()]];
  for (size_t a = 0; a < fusion.aliases().size(); ++a)
    plan.aliasPhase.push_back(phaseOfLevel[assignment.writeLevel(unsigned(a))]);
  for (const Value* output : fusion.outputs())
    plan.outputPhase.push_back(phaseOfLevel[assignment.outputLevel(output)]);
  // A result is kept when a later phase needs it.
  for (const Expr* expr : fusion.exprList()) {
    unsigned phase = plan.reductionPhase[expr->id()];
    if (phase == kNoPhase)
      continue;
    for (unsigned later = phase + 1; later < plan.needs.size(); ++later)
      if (plan.needs[later][expr->result()->id()]) {
        plan.kept.push_back({expr->result(), phase});
        break;
      }
  }
  if (plan.count == 1)
    return plan;
  for (const Expr* expr : fusion.exprList())
    if (plan.reductionPhase[expr->id()] != kNoPhase)
      plan.notes.push_back(fmt::format("{} '{}' is computed in phase {}", opName(expr->op()).str(),
                                       expr->result()->name(),
                                       plan.reductionPhase[expr->id()] + 1));
  for (size_t a = 0; a < fusion.aliases().size(); ++a)
    plan.notes.push_back(fmt::format("copy_ into '{}' is written in phase {}",
                                     fusion.aliases()[a].destination->name(),
                                     plan.aliasPhase[a] + 1));
  return plan;
}

} // namespace widefuse
