#pragma once
/// The segmenter's result: which subgraphs of a fusion become which kernels, and how each
/// in-place update stays correct inside its kernel.

#include "ir/fusion.h"
#include "ir/structural_hash.h"
#include "segmenter/phases.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// How components are grouped into kernels.
enum class SegmentationMode {
  PerComponent, ///< exactly one kernel per component ("one kernel per parameter")
  Batched,      ///< one kernel per signature class, any number of members of any shapes
  Packed,       ///< members of up to kMaxSignaturesPerPack signatures share one kernel
  Auto,         ///< the default: batched, explained in the report
};

/// Most signature classes one packed kernel holds.
inline constexpr unsigned kMaxSignaturesPerPack = 8;

/// The mode's command-line name: per-component, batched, packed, auto.
llvm::StringRef modeName(SegmentationMode mode);
/// Parses a mode name; throws Error listing the valid names.
SegmentationMode parseMode(llvm::StringRef name);

/// A connected subgraph of the fusion: one SPMD program over one iteration domain (one
/// optimizer parameter, typically).
struct Component {
  unsigned id = 0;
  /// The connected subgraph it comes from: components split by shape share it (otherwise it
  /// is one per component).
  unsigned subgraph = 0;
  /// Components that run in one launch share it: the parts of a subgraph that reduces in
  /// several ways, one body each (a body reduces one way). Otherwise the component's own id.
  unsigned launchUnit = 0;
  /// Its expressions in topological order, including the shared scalar expressions it reads.
  llvm::SmallVector<const Expr*, 32> exprs;
  /// Fusion inputs it reads or writes, in canonical order (first use, then written-only).
  llvm::SmallVector<const Value*, 8> inputs;
  /// Its in-place updates.
  llvm::SmallVector<Alias, 4> aliases;
  /// Its plain outputs (reduction results are not: see contributions).
  llvm::SmallVector<const Value*, 2> outputs;
  /// The reductions it computes a part of: each names the reduction and the operand this
  /// component computes (the only operand of a tensor-scope one; one of several of a global
  /// one, whose other operands other components compute). docs/segmenter.md section 9.
  llvm::SmallVector<Contribution, 1> contributions;
  /// The value whose shape is the iteration domain (a written tensor of the highest rank).
  const Value* domainValue = nullptr;
  /// Static extents of the domain (kSymbolicExtent where known only at run time).
  llvm::SmallVector<int64_t, 4> domain;
};

/// A constant whose value differs between members of one signature class; it becomes a
/// per-member value in the kernel's member table.
struct LiftedConstant {
  /// Position among the constants the class's body reads (in structural-key order).
  unsigned position = 0;
  DataType dtype = DataType::Double;
  /// The value for each member, in SignatureClass::members order.
  llvm::SmallVector<ConstantValue, 4> values;
};

/// Components with one signature (structure and types, extents ignored): one kernel body.
struct SignatureClass {
  unsigned id = 0;
  StructuralKey key;
  /// Component ids, ascending.
  llvm::SmallVector<unsigned, 4> members;
  llvm::SmallVector<LiftedConstant, 2> lifted;
};

/// How an in-place update is kept correct inside its kernel.
enum class HazardResolution {
  /// Written at the position it is read: each thread updates its own elements in place.
  InPlace,
  /// Read at other positions (a 0-d tensor read by every element, a broadcast read): written
  /// once after every block of the kernel has finished reading (last-block-done ticket).
  DeferredWrite,
};

/// The plan for one copy_ of one component.
struct HazardPlan {
  unsigned component = 0;
  Alias alias{};
  HazardResolution resolution = HazardResolution::InPlace;
  /// Why, in words (a note of the report).
  std::string note;
};

/// One kernel: the signature classes it runs and their members.
struct LaunchGroup {
  unsigned id = 0;
  llvm::SmallVector<unsigned, 1> signatureClasses;
  /// Component ids, ascending.
  std::vector<unsigned> members;
};

/// The segmentation of one phase (segmenter/phases.h): which of its subgraphs become which
/// kernels, and how each in-place update stays correct inside its kernel.
struct SegmentedPhase {
  const Fusion* fusion = nullptr;
  /// Its position among the fusion's phases, from 0.
  unsigned index = 0;
  /// What its kernels' names start with: the fusion's name, followed by `_phase<k>` (k from
  /// 1) in a fusion of several phases.
  std::string name;
  /// The mode applied (SegmentedFusion::mode).
  SegmentationMode mode = SegmentationMode::Batched;
  std::vector<Component> components;
  std::vector<SignatureClass> signatureClasses;
  std::vector<LaunchGroup> groups;
  std::vector<HazardPlan> aliasPlans;
  /// Sentences that say why each grouping was chosen, in order (the report's notes).
  std::vector<std::string> notes;
  /// The signature class of each component, by component id.
  std::vector<unsigned> classOfComponent;

  /// Number of kernel launches per run of the phase (one per group).
  size_t numLaunches() const { return groups.size(); }
};

/// The segmenter's plan for a whole fusion: its phases, in the order they run.
struct SegmentedFusion {
  const Fusion* fusion = nullptr;
  SegmentationMode requestedMode = SegmentationMode::Auto;
  /// The mode actually applied (auto resolves to a concrete mode).
  SegmentationMode mode = SegmentationMode::Batched;
  /// At least one.
  std::vector<SegmentedPhase> phases;
  /// The reduction results a later phase reads, which the runtime keeps between launches
  /// (PhasePlan::kept).
  std::vector<KeptResult> kept;
  /// Sentences explaining where each reduction and copy_ went (empty for one phase).
  std::vector<std::string> notes;

  /// Number of kernel launches per run, over every phase.
  size_t numLaunches() const;
  /// Number of components, over every phase (a parameter's are counted once per phase).
  size_t numComponents() const;
};

} // namespace widefuse
