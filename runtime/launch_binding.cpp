#include "runtime/launch_binding.h"

#include "ir/element_ops.h"
#include "ir/error.h"
#include "ir/half_float.h"

#include <llvm/ADT/DenseMap.h>

#include <algorithm>
#include <cstring>

namespace widefuse {

void encodeScalar(DataType dtype, const ScalarArgument& value, std::byte* out) {
  std::visit(
      [&](auto number) {
        using element::convertNumber;
        auto store = [&](auto typed) { std::memcpy(out, &typed, sizeof typed); };
        switch (dtype) {
        case DataType::Bool:
          return store(convertNumber<bool>(number));
        case DataType::Int8:
          return store(convertNumber<int8_t>(number));
        case DataType::Int16:
          return store(convertNumber<int16_t>(number));
        case DataType::Int32:
          return store(convertNumber<int32_t>(number));
        case DataType::Int64:
          return store(convertNumber<int64_t>(number));
        case DataType::UInt8:
          return store(convertNumber<uint8_t>(number));
        case DataType::UInt16:
          return store(convertNumber<uint16_t>(number));
        case DataType::UInt32:
          return store(convertNumber<uint32_t>(number));
        case DataType::Half:
          return store(toHalfBits(convertNumber<double>(number)));
        case DataType::BFloat16:
          return store(toBFloat16Bits(convertNumber<double>(number)));
        case DataType::Float:
          return store(convertNumber<float>(number));
        case DataType::Double:
          return store(convertNumber<double>(number));
        case DataType::Float8_e4m3fn:
        case DataType::Float8_e5m2:
        case DataType::Float8_e8m0fnu:
          return store(uint8_t(toNarrowBits(dtype, 0, convertNumber<float>(number))));
        case DataType::ComplexFloat:
        case DataType::ComplexDouble: // the IR has no complex scalar inputs or constants
          WF_UNREACHABLE("a complex scalar argument reached the launch binding");
        }
      },
      value);
}

namespace {

template <typename T> void put(std::vector<std::byte>& bytes, size_t offset, T value) {
  WF_ASSERT(offset + sizeof(T) <= bytes.size(), "binding writes past its block");
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

class Binder {
public:
  Binder(const KernelPlan& plan, const RuntimeShapes& shapes, TensorLookup tensorOf,
         ScalarLookup scalarOf, GlobalReductions& globals, unsigned index)
      : plan_(plan), segmented_(*plan.phase), shapes_(shapes), tensorOf_(tensorOf),
        scalarOf_(scalarOf), globals_(globals), index_(index) {
    for (const BodyPlan& body : plan.bodies) {
      bodyOfClass_[body.signatureClass] = &body;
      const SignatureClass& signature = segmented_.signatureClasses[body.signatureClass];
      for (unsigned position = 0; position < signature.members.size(); ++position)
        positionInClass_[signature.members[position]] = position;
    }
  }

  LaunchBinding bind(const KernelLaunch& launch);

private:
  /// Fills entry (at `entryOffset` in `entries`) for component `member`.
  void bindMember(unsigned member, std::vector<std::byte>& entries, size_t entryOffset,
                  LaunchBinding& binding, bool first);
  void bindSlot(const BodyPlan& body, const Slot& slot, const Component& component, unsigned member,
                llvm::ArrayRef<int64_t> domain, LaunchBinding& binding,
                std::vector<std::byte>& bytes, size_t base);
  /// A member's chunks, the work of one (elements), and its partials per reduction.
  struct MemberChunks {
    int64_t chunks = 0, chunkWork = 0, partials = 0;
  };
  /// The chunks of a rows member of `groups` row groups: each group by its segments of
  /// columns (one where the rows are no longer than a segment, or where there are none);
  /// writes row_segments and reserves the group tickets.
  MemberChunks bindRows(const BodyPlan& body, llvm::ArrayRef<int64_t> domain, int64_t rows,
                        int64_t groups, LaunchBinding& binding, std::vector<std::byte>& entries,
                        size_t entryOffset);
  /// A member's reduction fields: its partials and, for a global reduction, the results and
  /// ticket every contributor in the launch shares.
  void bindReduction(const ReductionSlot& slot, const Component& component, int64_t partials,
                     LaunchBinding& binding, std::vector<std::byte>& bytes, size_t base);
  /// `bytes` of workspace, 16-byte aligned, written at `offset` of `bytes`.
  uint64_t reserve(LaunchBinding& binding, uint64_t size, std::vector<std::byte>& bytes,
                   size_t offset);

  const KernelPlan& plan_;
  const SegmentedPhase& segmented_;
  const RuntimeShapes& shapes_;
  TensorLookup tensorOf_;
  ScalarLookup scalarOf_;
  GlobalReductions& globals_;
  /// The launch's position in its fusion (where its workspace lives).
  unsigned index_;
  llvm::DenseMap<unsigned, const BodyPlan*> bodyOfClass_;
  /// A member's position in its signature class (the index of its lifted constant values).
  llvm::DenseMap<unsigned, unsigned> positionInClass_;
};

/// The value a slot reads or writes in `component`.
const Value* slotValue(const Slot& slot, const Component& component) {
  switch (slot.source.kind) {
  case SlotSource::Kind::Input:
    return component.inputs[slot.source.index];
  case SlotSource::Kind::Output:
    return component.outputs[slot.source.index];
  case SlotSource::Kind::Constant:
    return nullptr;
  }
  WF_UNREACHABLE("unknown slot source");
}

void Binder::bindSlot(const BodyPlan& body, const Slot& slot, const Component& component,
                      unsigned member, llvm::ArrayRef<int64_t> domain, LaunchBinding& binding,
                      std::vector<std::byte>& bytes, size_t base) {
  if (slot.kind == SlotKind::LiftedConstant) {
    const SignatureClass& signature = segmented_.signatureClasses[body.signatureClass];
    encodeScalar(slot.dtype, signature.lifted[slot.source.index].values[positionInClass_[member]],
                 bytes.data() + base + slot.offset);
    return;
  }
  const Value* value = slotValue(slot, component);
  // Extent values are bound from the shapes, which a prepared step never changes.
  if (slot.source.kind == SlotSource::Kind::Input && value->isInput())
    binding.sites.push_back({value->id(), &bytes == &binding.table, slot.kind == SlotKind::Scalar,
                             slot.dtype, uint32_t(base + slot.offset)});
  if (slot.kind == SlotKind::Scalar) {
    encodeScalar(slot.dtype, scalarOf_(value), bytes.data() + base + slot.offset);
    return;
  }
  const TensorRef& tensor = tensorOf_(value, slot.source.kind == SlotSource::Kind::Output);
  // A block tensor is indexed by its element number alone.
  if (slot.kind == SlotKind::BlockTensor && tensor.shape[0] > 1 && tensor.strides[0] != 1)
    fail("'{}' holds one element per block of {} and must be contiguous; it has stride {}",
         value->name(), slot.block, tensor.strides[0]);
  put(bytes, base + slot.offset, tensor.data);
  if (slot.kind != SlotKind::ElementTensor || body.indexing != Indexing::Strided)
    return;
  // Effective strides over the domain: a tensor dimension follows the domain dimension its
  // view names; broadcast (size-1) and absent dimensions advance by 0. A member of lower rank
  // than the body (flattenable classes) is aligned to the body's last dimensions.
  size_t rank = tensor.shape.size();
  bool aligned = rank == slot.view.size();
  for (unsigned d = 0; d < body.domainRank; ++d) {
    int64_t stride = 0;
    for (size_t t = 0; t < rank; ++t) {
      int64_t follows = aligned ? slot.view[t] : int64_t(body.domainRank - rank + t);
      if (follows == int64_t(d) && (tensor.shape[t] != 1 || domain[d] == 1))
        stride = tensor.strides[t];
    }
    put(bytes, base + slot.stridesOffset + 8 * d, stride);
  }
}

uint64_t Binder::reserve(LaunchBinding& binding, uint64_t size, std::vector<std::byte>& bytes,
                         size_t offset) {
  uint64_t at = (binding.workspaceBytes + 15) / 16 * 16;
  binding.workspaceBytes = at + size;
  binding.workspaceSites.push_back({&bytes == &binding.table, uint32_t(offset), at, index_});
  return at;
}

void Binder::bindReduction(const ReductionSlot& slot, const Component& component, int64_t partials,
                           LaunchBinding& binding, std::vector<std::byte>& bytes, size_t base) {
  auto [reduction, operand] = component.contributions[slot.contribution];
  put(bytes, base + slot.outOffset, tensorOf_(reduction->result(), true).data);
  if (reduction->attributes().reduction == ReductionScope::Rows) {
    // The class's signature keys the reduced dimension from the end (structural_hash.cpp).
    WF_ASSERT(
        reduction->operand(0)->rank() - 1 - reduction->attributes().dim ==
            int64_t(bodyOfClass_.lookup(segmented_.classOfComponent[component.id])->rowTrailing),
        "'{}' reduces another dimension than its class's body", reduction->result()->name());
  }
  uint64_t accumulator = byteSize(computeType(slot.accumulator));
  if (partials > 0)
    reserve(binding, uint64_t(partials) * accumulator, bytes, base + slot.partialsOffset);
  if (!slot.global)
    return;
  unsigned operands = unsigned(reduction->operands().size());
  auto [found, first] = globals_.entries.try_emplace(reduction);
  GlobalReductions::Entry& global = found->second;
  if (first) {
    global.launch = index_;
    global.results = reserve(binding, operands * accumulator, bytes, base + slot.resultsOffset);
    global.ticket = reserve(binding, sizeof(uint32_t), bytes, base + slot.ticketOffset);
  } else {
    bool inTable = &bytes == &binding.table;
    binding.workspaceSites.push_back(
        {inTable, uint32_t(base + slot.resultsOffset), global.results, global.launch});
    binding.workspaceSites.push_back(
        {inTable, uint32_t(base + slot.ticketOffset), global.ticket, global.launch});
  }
  global.contributors += 1;
  put(bytes, base + slot.operandOffset, int32_t(operand));
  put(bytes, base + slot.operandsOffset, int32_t(operands));
}

Binder::MemberChunks Binder::bindRows(const BodyPlan& body, llvm::ArrayRef<int64_t> domain,
                                      int64_t rows, int64_t groups, LaunchBinding& binding,
                                      std::vector<std::byte>& entries, size_t entryOffset) {
  int64_t columns = domain.empty() ? 0 : domain[domain.size() - 1 - body.rowTrailing];
  if (columns > kMaxRowElements)
    fail("'{}' reduces rows of {} elements; a kernel reduces rows of at most {}", plan_.name,
         columns, kMaxRowElements);
  int64_t segment = body.rowSegmentColumns;
  int64_t segments = rows == 0 || columns <= segment ? 1 : (columns + segment - 1) / segment;
  if (groups > kMaxChunks / segments)
    fail("a kernel launch of '{}' would need more than {} chunks; split the fusion", plan_.name,
         kMaxChunks);
  put(entries, entryOffset + body.rowSegmentsOffset, int32_t(segments));
  if (segments > 1) // a ticket per row group
    reserve(binding, uint64_t(groups) * sizeof(uint32_t), entries,
            entryOffset + body.rowTicketsOffset);
  // A chunk is a row group by a segment of columns; rows of one segment are written by their
  // warps, longer ones leave a partial per segment.
  return {groups * segments, body.chunkElements * std::clamp<int64_t>(columns, 1, segment),
          segments > 1 ? rows * segments : 0};
}

void Binder::bindMember(unsigned member, std::vector<std::byte>& entries, size_t entryOffset,
                        LaunchBinding& binding, bool first) {
  const Component& component = segmented_.components[member];
  const BodyPlan& body = *bodyOfClass_.lookup(segmented_.classOfComponent[member]);
  llvm::SmallVector<int64_t, 4> domain;
  if (component.domainValue)
    domain.assign(shapes_.of(component.domainValue).begin(),
                  shapes_.of(component.domainValue).end());
  // A body reducing over rows has a row for an element (an [R, 0] domain still has R rows).
  int64_t numel = numElements(domain);
  int64_t elements = numel;
  if (body.reducesRows) {
    numel = 1;
    for (size_t d = 0; d < domain.size(); ++d)
      if (d != domain.size() - 1 - body.rowTrailing)
        numel *= domain[d];
  }
  if (body.indexing == Indexing::Strided) // leading 1s up to the body's rank
    domain.insert(domain.begin(),
                  body.domainRank - std::min<size_t>(domain.size(), body.domainRank), 1);
  MemberChunks shares{std::max<int64_t>(1, (numel + body.chunkElements - 1) / body.chunkElements),
                      body.chunkElements, 0};
  shares.partials = shares.chunks;
  if (body.reducesRows)
    shares = bindRows(body, domain, numel, shares.chunks, binding, entries, entryOffset);
  if (int64_t(binding.numChunks) + shares.chunks > kMaxChunks)
    fail("a kernel launch of '{}' would need more than {} chunks; split the fusion", plan_.name,
         kMaxChunks);
  put(entries, entryOffset + abi::kEntryNumelOffset, numel);
  put(entries, entryOffset + abi::kEntryFirstChunkOffset, int32_t(binding.numChunks));
  put(entries, entryOffset + abi::kEntryBodyOffset, int32_t(body.index));
  put(entries, entryOffset + abi::kEntryFirstWorkOffset, binding.work);
  put(entries, entryOffset + abi::kEntryChunkWorkOffset, shares.chunkWork);
  binding.numChunks += unsigned(shares.chunks);
  binding.numElements += elements;
  binding.work += shares.chunks * shares.chunkWork;
  if (body.indexing == Indexing::Strided)
    for (unsigned d = 0; d < body.domainRank; ++d)
      put(entries, entryOffset + body.extentsOffset + 8 * d, domain[d]);
  for (const Slot& slot : body.slots) {
    if (!slot.shared)
      bindSlot(body, slot, component, member, domain, binding, entries, entryOffset);
    else if (first) // shared slots hold the same value for every member
      bindSlot(body, slot, component, member, domain, binding, binding.parameters, 0);
  }
  for (const ReductionSlot& slot : body.reductions)
    bindReduction(slot, component, shares.partials, binding, entries, entryOffset);
}

LaunchBinding Binder::bind(const KernelLaunch& launch) {
  LaunchBinding binding;
  binding.parameters.assign((plan_.parameterBytes + 7) / 8 * 8, std::byte{0});
  bool inParameters = plan_.tableLocation == TableLocation::KernelParameters;
  WF_ASSERT(!inParameters || launch.members.size() <= plan_.tableCapacity,
            "more members than the table holds");
  if (!inParameters)
    binding.table.assign(launch.members.size() * plan_.entryBytes, std::byte{0});
  std::vector<std::byte>& entries = inParameters ? binding.parameters : binding.table;
  size_t base = inParameters ? plan_.tableOffset : 0;
  llvm::SmallVector<bool, 8> seenBody(plan_.bodies.size(), false);
  for (size_t i = 0; i < launch.members.size(); ++i) {
    unsigned member = launch.members[i];
    const BodyPlan& body = *bodyOfClass_.lookup(segmented_.classOfComponent[member]);
    bool first = !seenBody[body.index];
    seenBody[body.index] = true;
    bindMember(member, entries, base + i * plan_.entryBytes, binding, first);
  }
  put(binding.parameters, abi::kNumMembersOffset, int32_t(launch.members.size()));
  put(binding.parameters, abi::kNumChunksOffset, int32_t(binding.numChunks));
  return binding;
}

} // namespace

LaunchBinding bindLaunch(const KernelPlan& plan, const KernelLaunch& launch,
                         const RuntimeShapes& shapes, TensorLookup tensorOf, ScalarLookup scalarOf,
                         GlobalReductions& globals, unsigned index) {
  return Binder(plan, shapes, tensorOf, scalarOf, globals, index).bind(launch);
}

void GlobalReductions::checkComplete() const {
  // The last contributor combines every operand's tree: a missing one would never finish.
  for (const auto& [reduction, global] : entries)
    WF_ASSERT(global.contributors == reduction->operands().size(),
              "the launches compute {} of the {} operands of '{}'", global.contributors,
              reduction->operands().size(), reduction->result()->name());
}

void patchArguments(LaunchBinding& binding, llvm::ArrayRef<uint8_t> changed,
                    llvm::function_ref<const Argument&(unsigned value)> argumentOf) {
  for (const ArgumentSite& site : binding.sites) {
    if (!changed[site.value])
      continue;
    std::vector<std::byte>& bytes = site.inTable ? binding.table : binding.parameters;
    const Argument& argument = argumentOf(site.value);
    if (site.isScalar)
      encodeScalar(site.dtype, std::get<ScalarArgument>(argument), bytes.data() + site.offset);
    else
      put(bytes, site.offset, std::get<TensorRef>(argument).data);
  }
}

unsigned gridBlocks(const LaunchBinding& binding, unsigned maxBlocks) {
  return std::max(1u, std::min({binding.numChunks, maxBlocks, kMaxGridBlocks}));
}

void setWorkspaceAddresses(LaunchBinding& binding, llvm::ArrayRef<void*> bases) {
  for (const WorkspaceSite& site : binding.workspaceSites) {
    std::vector<std::byte>& bytes = site.inTable ? binding.table : binding.parameters;
    auto* base = static_cast<std::byte*>(bases[site.launch]);
    put(bytes, site.offset, static_cast<void*>(base + site.workspaceOffset));
  }
}

void setTableAddresses(LaunchBinding& binding, const void* table, const void* tickets) {
  put(binding.parameters, abi::kTicketsOffset, tickets);
  put(binding.parameters, abi::kTableOffset, table);
}

} // namespace widefuse
