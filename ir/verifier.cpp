#include "ir/verifier.h"

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_builder.h"

#include <vector>

namespace widefuse {
namespace {

/// The values defined so far, by id: a flat array, since every value of every expression is
/// looked up (a fusion of many parameters has millions).
class DefinedValues {
public:
  explicit DefinedValues(const Fusion& fusion) : fusion_(fusion), defined_(fusion.numValues()) {}
  bool count(const Value* value) const { return fusion_.owns(value) && defined_[value->id()]; }
  /// Marks `value` (of this fusion) defined; false when it was already.
  bool insert(const Value* value) {
    bool fresh = !defined_[value->id()];
    defined_[value->id()] = true;
    return fresh;
  }

private:
  const Fusion& fusion_;
  std::vector<bool> defined_;
};

void verifyExpr(const Fusion& fusion, const Expr& expr, const DefinedValues& defined) {
  for (const Value* operand : expr.operands())
    if (!fusion.owns(operand) || !defined.count(operand))
      fail("fusion '{}': '{}' uses '{}' before it is defined", fusion.name(), expr.result()->name(),
           operand->name());
  // An extent value names a tensor whose run-time shape is bound before this expression's.
  for (const Value* extent : expr.attributes().broadcastExtents)
    if (extent && (!fusion.owns(extent) || !defined.count(extent)))
      fail("fusion '{}': '{}' takes an output extent from '{}' before it is defined", fusion.name(),
           expr.result()->name(), extent->name());
  if (!isReduction(expr.op()) && expr.attributes().reduction != ReductionScope::None)
    fail("fusion '{}': '{}' is a {}, which takes no reduction scope", fusion.name(),
         expr.result()->name(), opName(expr.op()).str());
  llvm::SmallVector<const Value*, 3> operands(expr.operands().begin(), expr.operands().end());
  ValueType expected = inferResultType(expr.op(), operands, expr.attributes());
  const Value& result = *expr.result();
  if (result.definition() != &expr || result.kind() != expected.kind ||
      result.dtype() != expected.dtype ||
      result.extents() != llvm::ArrayRef<int64_t>(expected.extents))
    fail("fusion '{}': '{}' has type {} but {} gives {}", fusion.name(), result.name(),
         formatType(result), opName(expr.op()).str(), shortName(expected.dtype).str());
}

} // namespace

void verify(const Fusion& fusion) {
  DefinedValues defined(fusion);
  for (size_t id = 0; id < fusion.numValues(); ++id) {
    const Value* value = fusion.value(static_cast<unsigned>(id));
    if (value->isInput() || value->isConstant())
      defined.insert(value);
    if (value->isInput() && value->definition())
      fail("fusion '{}': input '{}' also has a definition", fusion.name(), value->name());
  }
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr& expr = *fusion.expr(static_cast<unsigned>(id));
    verifyExpr(fusion, expr, defined);
    if (!defined.insert(expr.result()))
      fail("fusion '{}': '{}' is defined twice", fusion.name(), expr.result()->name());
  }
  DefinedValues written(fusion);
  for (const Alias& alias : fusion.aliases()) {
    if (!defined.count(alias.source))
      fail("fusion '{}': copy_ source '{}' is not defined", fusion.name(), alias.source->name());
    if (!alias.destination->isInput() || !alias.destination->isTensor())
      fail("fusion '{}': copy_ destination '{}' is not an input tensor", fusion.name(),
           alias.destination->name());
    if (!written.insert(alias.destination))
      fail("fusion '{}': two copies into '{}'", fusion.name(), alias.destination->name());
  }
  for (const Value* output : fusion.outputs())
    if (!defined.count(output) || !output->isTensor())
      fail("fusion '{}': output '{}' is not a defined tensor", fusion.name(), output->name());
}

} // namespace widefuse
