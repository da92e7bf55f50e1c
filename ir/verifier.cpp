#include "ir/verifier.h"

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_builder.h"

#include <llvm/ADT/DenseSet.h>

namespace widefuse {
namespace {

void verifyExpr(const Fusion& fusion, const Expr& expr,
                const llvm::DenseSet<const Value*>& defined) {
  for (const Value* operand : expr.operands())
    if (!fusion.owns(operand) || !defined.count(operand))
      fail("fusion '{}': '{}' uses '{}' before it is defined", fusion.name(), expr.result()->name(),
           operand->name());
  // An extent value names a tensor whose run-time shape is bound before this expression's.
  for (const Value* extent : expr.attributes().broadcastExtents)
    if (extent && (!fusion.owns(extent) || !defined.count(extent)))
      fail("fusion '{}': '{}' takes an output extent from '{}' before it is defined", fusion.name(),
           expr.result()->name(), extent->name());
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
  llvm::DenseSet<const Value*> defined;
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
    if (!defined.insert(expr.result()).second)
      fail("fusion '{}': '{}' is defined twice", fusion.name(), expr.result()->name());
  }
  llvm::DenseSet<const Value*> written;
  for (const Alias& alias : fusion.aliases()) {
    if (!defined.count(alias.source))
      fail("fusion '{}': copy_ source '{}' is not defined", fusion.name(), alias.source->name());
    if (!alias.destination->isInput() || !alias.destination->isTensor())
      fail("fusion '{}': copy_ destination '{}' is not an input tensor", fusion.name(),
           alias.destination->name());
    if (!written.insert(alias.destination).second)
      fail("fusion '{}': two copies into '{}'", fusion.name(), alias.destination->name());
  }
  for (const Value* output : fusion.outputs())
    if (!defined.count(output) || !output->isTensor())
      fail("fusion '{}': output '{}' is not a defined tensor", fusion.name(), output->name());
}

} // namespace widefuse
