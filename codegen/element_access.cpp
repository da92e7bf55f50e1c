// How a body's loops reach one element (docs/codegen.md): its reads and stores in flat,
// strided and vector loops, the offsets of strided tensors, and the element's index, which
// element_index reads.
#include "codegen/emitter_internal.h"
#include "ir/error.h"

#include <fmt/format.h>

namespace widefuse {

std::string BodyEmitter::indexArgument(llvm::StringRef index) const {
  if (!readsElementIndex_)
    return "";
  if (index.empty())
    throw Error("element_index in a body reduced over rows is not supported by kernels yet "
                "(the reference evaluator runs it)");
  return fmt::format(", i64({})", index.str());
}

void BodyEmitter::perElement(const ElementAccess& access) {
  llvm::SmallVector<std::string, 8> reads;
  forEachElementTensor(true, false, [&](const Slot& slot) { reads.push_back(access.read(slot)); });
  out_.wrapped(fmt::format("const {0}_out out = {0}_element(u, {{", body_.name), reads, ", ",
               fmt::format("}}{});", indexArgument(access.index)));
  forEachElementTensor(false, true, [&](const Slot& slot) { out_.line(access.store(slot)); });
}

void BodyEmitter::elementLoop(const ElementLoop& loop) {
  out_.open(loop.head);
  if (loop.locate)
    loop.locate();
  perElement(loop.access);
  out_.close();
}

void BodyEmitter::offsetLocal(const Slot& slot,
                              llvm::function_ref<std::string(unsigned)> coordinate) {
  std::vector<std::string> terms;
  for (unsigned d = 0; d < body_.domainRank; ++d)
    terms.push_back(
        fmt::format("{} * {}(entry.{}_strides[{}])", coordinate(d), indexType_, slot.field, d));
  if (terms.empty())
    terms.push_back("0");
  out_.wrapped(fmt::format("const {} at_{} = ", indexType_, slot.field), terms, " + ", ";");
}

ElementAccess BodyEmitter::flatAccess() const {
  return {
      [](const Slot& slot) { return "wf_global(entry." + slot.field + ")[i]"; },
      [&](const Slot& slot) { return fmt::format("{}[i] = out.{};", pointerOf(slot), slot.field); },
      "i"};
}

void BodyEmitter::stridedLocate() {
  unsigned rank = body_.domainRank;
  if (rank > 0)
    out_.line("{} rest = i; // coordinates of element i in the domain", indexType_);
  for (unsigned d = rank; d-- > 1;) {
    out_.line("const {0} c{1} = rest % {0}(entry.extents[{1}]);", indexType_, d);
    out_.line("rest /= {}(entry.extents[{}]);", indexType_, d);
  }
  if (rank > 0)
    out_.line("const {} c0 = rest;", indexType_);
  // Each tensor's offset of the element, from its own strides (0 along broadcast dimensions).
  forEachElementTensor(true, true, [&](const Slot& slot) {
    offsetLocal(slot, [](unsigned d) { return fmt::format("c{}", d); });
  });
}

ElementAccess BodyEmitter::stridedAccess() const {
  return {[&](const Slot& slot) { return fmt::format("{}[at_{}]", pointerOf(slot), slot.field); },
          [&](const Slot& slot) {
            return fmt::format("{}[at_{}] = out.{};", pointerOf(slot), slot.field, slot.field);
          },
          "i"};
}

ElementAccess BodyEmitter::rowsAccess() const {
  ElementAccess access = stridedAccess();
  access.index.clear();
  return access;
}

} // namespace widefuse
