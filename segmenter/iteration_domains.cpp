#include "segmenter/iteration_domains.h"

namespace widefuse {

IterationDomains::IterationDomains(const Fusion& fusion) : classes_(fusion.numValues()) {
  for (const Value* input : fusion.inputs())
    addInput(input);
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr& expr = *fusion.expr(unsigned(id));
    const Value* result = expr.result();
    if (!result->isTensor() || result->rank() == 0)
      continue;
    if (expr.op() == OpKind::BroadcastInDim || expr.op() == OpKind::ExpandBlocks)
      addBroadcast(expr); // expand_blocks: its extents, never its operand's
    else if (expr.attributes().reduction == ReductionScope::Block)
      addInput(result); // one element per block: an extent of its own
    else
      addPointwise(expr); // also cast, bitcast and set: the operand's shape
  }
  // A copy_ writes its source's shape into its destination, which must be the same.
  for (const Alias& alias : fusion.aliases())
    if (alias.source->rank() == alias.destination->rank())
      for (size_t d = 0; d < alias.source->rank(); ++d) {
        int source = classOf(alias.source, d), destination = classOf(alias.destination, d);
        if (source >= 0 && destination >= 0)
          equate(unsigned(source), unsigned(destination));
        else if (source >= 0 || destination >= 0)
          equateStatic(unsigned(std::max(source, destination)),
                       source >= 0 ? alias.destination->extents()[d] : alias.source->extents()[d]);
      }
}

unsigned IterationDomains::newClass() {
  equal_.grow(++numClasses_);
  staticExtent_.push_back(kSymbolicExtent);
  return numClasses_ - 1;
}

int IterationDomains::classOf(const Value* value, size_t d) const {
  const auto& classes = classes_[value->id()];
  return d < classes.size() ? classes[d] : -1;
}

void IterationDomains::equate(unsigned a, unsigned b) {
  unsigned leaderA = equal_.findLeader(a), leaderB = equal_.findLeader(b);
  if (leaderA == leaderB)
    return;
  int64_t known =
      staticExtent_[leaderA] != kSymbolicExtent ? staticExtent_[leaderA] : staticExtent_[leaderB];
  unsigned leader = equal_.join(leaderA, leaderB);
  staticExtent_[leader] = known;
}

void IterationDomains::equateStatic(unsigned a, int64_t extent) {
  int64_t& known = staticExtent_[equal_.findLeader(a)];
  if (known == kSymbolicExtent)
    known = extent;
}

void IterationDomains::addInput(const Value* value) {
  if (!value->isTensor())
    return;
  auto& classes = classes_[value->id()];
  for (int64_t extent : value->extents())
    classes.push_back(extent == kSymbolicExtent ? int(newClass()) : -1);
}

void IterationDomains::addPointwise(const Expr& expr) {
  const Value* result = expr.result();
  auto& classes = classes_[result->id()];
  classes.assign(result->rank(), -1);
  for (size_t d = 0; d < result->rank(); ++d) {
    int64_t extent = result->extents()[d];
    // Operands have the result's rank here (implicit broadcasts are explicit in the IR), and
    // a symbolic extent never stretches: every symbolic operand extent is the result's.
    for (const Value* operand : expr.operands()) {
      int operandClass = operand->rank() == result->rank() ? classOf(operand, d) : -1;
      if (operandClass < 0)
        continue;
      if (extent != kSymbolicExtent)
        equateStatic(unsigned(operandClass), extent);
      else if (classes[d] < 0)
        classes[d] = operandClass;
      else
        equate(unsigned(classes[d]), unsigned(operandClass));
    }
  }
}

void IterationDomains::addBroadcast(const Expr& expr) {
  const Value* result = expr.result();
  const OpAttributes& attributes = expr.attributes();
  auto& classes = classes_[result->id()];
  classes.assign(result->rank(), -1);
  for (size_t d = 0; d < result->rank(); ++d) {
    if (result->extents()[d] != kSymbolicExtent)
      continue;
    const Value* extent =
        attributes.broadcastExtents.empty() ? nullptr : attributes.broadcastExtents[d];
    if (extent) {
      classes[d] = classOfExtent(extent);
      continue;
    }
    // No named extent: the output takes the mapped operand dimension's extent.
    auto mapped = llvm::find(attributes.broadcastDims, int64_t(d));
    size_t i = size_t(mapped - attributes.broadcastDims.begin());
    classes[d] =
        mapped == attributes.broadcastDims.end() ? int(newClass()) : classOf(expr.operand(0), i);
    if (classes[d] < 0)
      classes[d] = int(newClass());
  }
}

int IterationDomains::classOfExtent(const Value* extent) {
  const Expr* definition = extent->definition();
  if (definition && definition->op() == OpKind::Size) {
    int tensorClass = classOf(definition->operand(0), size_t(definition->attributes().dim));
    if (tensorClass >= 0)
      return tensorClass;
  }
  auto [it, added] = ofExtentValue_.try_emplace(extent, 0);
  if (added)
    it->second = int(newClass());
  return it->second;
}

llvm::SmallVector<int64_t, 4> IterationDomains::keyOf(const Value* value) const {
  llvm::SmallVector<int64_t, 4> key;
  for (size_t d = 0; d < value->rank(); ++d) {
    int extentClass = classOf(value, d);
    if (extentClass < 0) {
      key.push_back(value->extents()[d]);
      continue;
    }
    unsigned leader = equal_.findLeader(unsigned(extentClass));
    int64_t known = staticExtent_[leader];
    key.push_back(known != kSymbolicExtent ? known : -1 - int64_t(leader));
  }
  return key;
}

} // namespace widefuse
