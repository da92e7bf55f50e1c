#include "segmenter/passes.h"

#include "ir/error.h"
#include "ir/verifier.h"

#include <fmt/format.h>

#include <algorithm>

namespace widefuse {
namespace {

/// Levels (docs/segmenter.md 9.1): inputs and constants are 1, a pointwise value is the
/// latest of its operands, a reduction result is one after the pass computing it.
struct Levels {
  std::vector<unsigned> ofValue;
  /// Per expression: the pass a reduction is computed in (0 for other expressions).
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
    if (isReduction(expr->op())) {
      levels.computedIn[expr->id()] = latest;
      latest += 1;
    }
    levels.ofValue[expr->result()->id()] = latest;
  }
  return levels;
}

/// What the whole fusion asks of each pass, and where each copy_ is written.
class PassAssignment {
public:
  PassAssignment(const Fusion& fusion)
      : fusion_(fusion), levels_(levelsOf(fusion)), live_(liveValues(fusion)) {
    for (const Alias& alias : fusion.aliases())
      writePass_.push_back(levels_.ofValue[alias.source->id()]);
    settleWrites();
  }

  unsigned count() const { return count_; }
  unsigned writePass(unsigned alias) const { return writePass_[alias]; }
  const Levels& levels() const { return levels_; }

  /// The pass an output of the whole fusion is produced in: a reduction result by its own
  /// pass, any other value by its level.
  unsigned outputPass(const Value* output) const {
    const Expr* definition = output->definition();
    if (definition && isReduction(definition->op()))
      return levels_.computedIn[definition->id()];
    return levels_.ofValue[output->id()];
  }

  /// The values pass `pass` computes or reads, by id: the cones of its work, cut at the
  /// results of earlier passes (which it reads as inputs).
  std::vector<bool> cone(unsigned pass) const {
    std::vector<bool> needed(fusion_.numValues(), false);
    std::vector<const Value*> stack;
    auto need = [&](const Value* value) {
      if (!needed[value->id()]) {
        needed[value->id()] = true;
        stack.push_back(value);
      }
    };
    for (const Expr* expr : fusion_.exprList())
      if (computes(*expr, pass))
        need(expr->result());
    for (const Value* output : fusion_.outputs())
      if (outputPass(output) == pass)
        need(output);
    for (size_t a = 0; a < fusion_.aliases().size(); ++a)
      if (writePass_[a] == pass) {
        need(fusion_.aliases()[a].source);
        need(fusion_.aliases()[a].destination);
      }
    while (!stack.empty()) {
      const Value* value = stack.back();
      stack.pop_back();
      const Expr* definition = value->definition();
      if (!definition || isEarlierResult(*value, pass))
        continue;
      for (const Value* operand : definition->operands())
        need(operand);
      for (const Value* extent : definition->attributes().broadcastExtents)
        if (extent)
          need(extent);
    }
    return needed;
  }

  /// True for a reduction whose result something reads, computed in `pass`.
  bool computes(const Expr& expr, unsigned pass) const {
    return isReduction(expr.op()) && live_[expr.result()->id()] &&
           levels_.computedIn[expr.id()] == pass;
  }

  /// A reduction result computed before `pass`: an input there.
  bool isEarlierResult(const Value& value, unsigned pass) const {
    const Expr* definition = value.definition();
    return definition && isReduction(definition->op()) &&
           levels_.computedIn[definition->id()] < pass;
  }

private:
  /// The values an output or a copy_ source depends on, by id.
  static std::vector<bool> liveValues(const Fusion& fusion) {
    std::vector<bool> live(fusion.numValues(), false);
    for (const Value* output : fusion.outputs())
      live[output->id()] = true;
    for (const Alias& alias : fusion.aliases())
      live[alias.source->id()] = live[alias.destination->id()] = true;
    std::vector<Expr*> exprs = fusion.exprList();
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

  /// Moves each copy_ to the last pass that reads its destination, until nothing moves: a
  /// write only moves later, and the pass count bounds it.
  void settleWrites() {
    for (bool moved = true; moved;) {
      moved = false;
      count_ = 1;
      for (const Expr* expr : fusion_.exprList())
        if (computes(*expr, levels_.computedIn[expr->id()]))
          count_ = std::max(count_, levels_.computedIn[expr->id()]);
      for (const Value* output : fusion_.outputs())
        count_ = std::max(count_, outputPass(output));
      for (unsigned pass : writePass_)
        count_ = std::max(count_, pass);
      for (unsigned pass = count_; pass > 1; --pass) {
        std::vector<bool> reads = cone(pass);
        for (size_t a = 0; a < writePass_.size(); ++a)
          if (writePass_[a] < pass && reads[fusion_.aliases()[a].destination->id()]) {
            writePass_[a] = pass;
            moved = true;
          }
      }
    }
  }

  const Fusion& fusion_;
  Levels levels_;
  std::vector<bool> live_;
  std::vector<unsigned> writePass_;
  unsigned count_ = 1;
};

/// Builds one pass's fusion from the values it needs.
class PassBuilder {
public:
  PassBuilder(const Fusion& fusion, const PassAssignment& assignment, unsigned pass, PassPlan& plan)
      : fusion_(fusion), assignment_(assignment), pass_(pass), plan_(plan),
        clone_(fusion.numValues(), nullptr) {}

  Pass build() {
    std::vector<bool> needed = assignment_.cone(pass_);
    result_.fusion = std::make_unique<Fusion>(fmt::format("{}_pass{}", fusion_.name(), pass_));
    result_.fusion->markPass();
    for (size_t i = 0; i < fusion_.inputs().size(); ++i) {
      const Value* input = fusion_.inputs()[i];
      if (!needed[input->id()])
        continue;
      clone_[input->id()] = input->isTensor()
                                ? out().addTensorInput(input->name(), input->dtype(),
                                                       input->extents(), input->layout())
                                : out().addScalarInput(input->name(), input->dtype());
      result_.inputs.push_back({PassInput::Kind::FusionInput, unsigned(i)});
    }
    for (unsigned r = 0; r < plan_.results.size(); ++r) {
      const Value* value = plan_.results[r].value;
      if (!needed[value->id()])
        continue;
      clone_[value->id()] = out().addTensorInput(value->name(), value->dtype(), value->extents());
      result_.inputs.push_back({PassInput::Kind::EarlierResult, r});
    }
    for (size_t id = 0; id < fusion_.numValues(); ++id) {
      const Value* value = fusion_.value(unsigned(id));
      if (needed[id] && value->isConstant())
        clone_[id] = out().addConstant(*value->constant(), value->dtype(), value->isWeak());
    }
    for (const Expr* expr : fusion_.exprList())
      if (needed[expr->result()->id()] && !clone_[expr->result()->id()])
        cloneExpr(*expr);
    addOutputs();
    for (unsigned a = 0; a < fusion_.aliases().size(); ++a)
      if (assignment_.writePass(a) == pass_) {
        const Alias& alias = fusion_.aliases()[a];
        out().addAlias(clone_[alias.source->id()], clone_[alias.destination->id()]);
        result_.aliases.push_back(a);
      }
    verify(out());
    return std::move(result_);
  }

private:
  Fusion& out() { return *result_.fusion; }

  void cloneExpr(const Expr& expr) {
    llvm::SmallVector<Value*, 3> operands;
    for (const Value* operand : expr.operands())
      operands.push_back(clone_[operand->id()]);
    OpAttributes attributes = expr.attributes();
    for (const Value*& extent : attributes.broadcastExtents)
      if (extent)
        extent = clone_[extent->id()];
    const Value& result = *expr.result();
    ValueType type;
    type.kind = result.kind();
    type.dtype = result.dtype();
    type.extents.assign(result.extents().begin(), result.extents().end());
    type.weak = result.isWeak();
    clone_[result.id()] =
        out().appendExpr(expr.op(), operands, std::move(attributes), type, result.name());
  }

  /// This pass's reductions whose results later passes read or the fusion returns, and the
  /// fusion's outputs produced here; a value both is one output.
  void addOutputs() {
    for (const Expr* expr : fusion_.exprList()) {
      if (!assignment_.computes(*expr, pass_))
        continue;
      PassResult result{expr->result(), pass_, unsigned(result_.outputs.size())};
      resultOf_[expr->result()] = int(plan_.results.size());
      plan_.results.push_back(result);
      out().addOutput(clone_[expr->result()->id()]);
      result_.outputs.push_back({-1, resultOf_[expr->result()]});
    }
    for (size_t i = 0; i < fusion_.outputs().size(); ++i) {
      const Value* output = fusion_.outputs()[i];
      if (assignment_.outputPass(output) != pass_)
        continue;
      auto known = resultOf_.find(output);
      if (known != resultOf_.end()) {
        result_.outputs[plan_.results[known->second].output].fusionOutput = int(i);
        continue;
      }
      out().addOutput(clone_[output->id()]);
      result_.outputs.push_back({int(i), -1});
    }
  }

  const Fusion& fusion_;
  const PassAssignment& assignment_;
  unsigned pass_;
  PassPlan& plan_;
  std::vector<Value*> clone_;
  llvm::DenseMap<const Value*, int> resultOf_;
  Pass result_;
};

} // namespace

bool hasReductions(const Fusion& fusion) {
  for (size_t id = 0; id < fusion.numExprs(); ++id)
    if (isReduction(fusion.expr(unsigned(id))->op()))
      return true;
  return false;
}

bool needsPasses(const Fusion& fusion) {
  auto isResult = [](const Value* value) {
    return value->definition() && isReduction(value->definition()->op());
  };
  for (size_t id = 0; id < fusion.numExprs(); ++id)
    if (llvm::any_of(fusion.expr(unsigned(id))->operands(), isResult))
      return true;
  return llvm::any_of(fusion.aliases(), [&](const Alias& alias) { return isResult(alias.source); });
}

PassPlan splitPasses(const Fusion& fusion) {
  PassAssignment assignment(fusion);
  PassPlan plan;
  for (unsigned pass = 1; pass <= assignment.count(); ++pass) {
    Pass built = PassBuilder(fusion, assignment, pass, plan).build();
    if (built.fusion->numExprs() == 0 && built.fusion->outputs().empty() &&
        built.fusion->aliases().empty())
      continue;
    for (const PassOutput& output : built.outputs)
      if (output.result >= 0)
        plan.results[size_t(output.result)].pass = unsigned(plan.passes.size());
    plan.passes.push_back(std::move(built));
  }
  for (const PassResult& result : plan.results)
    plan.decisions.push_back(fmt::format("{} '{}' is computed in pass {}",
                                         opName(result.value->definition()->op()).str(),
                                         result.value->name(), result.pass + 1));
  for (size_t a = 0; a < fusion.aliases().size(); ++a)
    plan.decisions.push_back(fmt::format("copy_ into '{}' is written in pass {}",
                                         fusion.aliases()[a].destination->name(),
                                         assignment.writePass(unsigned(a))));
  return plan;
}

} // namespace widefuse
