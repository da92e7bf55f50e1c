// The generated sources also compile with the host C++ compiler: NVRTC has no offsetof, so the
// member-table and parameter-block offsets of every plan are checked here (WF_CHECK_OFFSET
// static_asserts), and the prelude's host path and the host entry points compile, with the
// host backend's host prelude of CUDA built-ins, for every op.

#include "codegen/cuda_emitter.h"
#include "codegen/host_prelude.h"
#include "scheduler/cpp_names.h"
#include "scheduler/schedule.h"
#include "segmenter/segment.h"
#include "tests/codegen/test_fusions.h"
#include "tests/support/file_contents.h"
#include "tests/support/mixed_shapes.h"
#include "tests/support/temp_dir.h"

#include "ir/parser.h"
#include "tools/workloads/seed_adam.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>

#include <cstdlib>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Every kernel of `fusion` as codegen writes it: (kernel name, CUDA source), for the declared
/// specialization on the default device (the runtime plays no part).
std::vector<std::pair<std::string, std::string>> emitKernels(const Fusion& fusion,
                                                             SegmentationMode mode) {
  SegmentedFusion segmented = segment(fusion, {mode});
  ScheduledFusion scheduled =
      schedule(segmented, declaredSpecialization(segmented), defaultDevice());
  std::vector<std::pair<std::string, std::string>> kernels;
  for (const KernelPlan& plan : scheduled.plans)
    kernels.emplace_back(plan.name, emitCuda(plan));
  return kernels;
}

/// Emits every kernel of `fusion` and runs `c++ -fsyntax-only` on host prelude + source.
void expectHostCompiles(const Fusion& fusion, SegmentationMode mode) {
  SCOPED_TRACE(fusion.name());
  TempDir directory;
  for (const auto& [name, source] : emitKernels(fusion, mode)) {
    std::string path = directory.file(name + ".cpp");
    writeFile(path, hostPrelude().str() + "\n" + source);
    std::string log = directory.file("log.txt");
    std::string command = "c++ -std=c++17 -fsyntax-only -Wall -Wno-unknown-pragmas "
                          "-Wno-unused-variable -Wno-unused-but-set-variable '" +
                          path + "' >'" + log + "' 2>&1";
    int status = std::system(command.c_str());
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << name << ":\n"
                                                                               << readFile(log);
    EXPECT_EQ(readFile(log), "") << name << " compiled with warnings";
  }
}

/// Every identifier of the kernel skeleton in `source` (after the prelude) that a fusion could
/// name a value: not a member (after `.` or `->`), not in the prelude's reserved prefixes. The
/// fusion's own name is replaced by `probe`, the name of the fusion that takes them.
std::set<std::string> skeletonIdentifiers(const std::string& source, const std::string& fusion) {
  std::string skeleton = source.substr(source.find("// ---- kernel skeleton ----"));
  static const std::regex identifier(R"((\.|->|::)?\b([A-Za-z]\w*)\b)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(skeleton.begin(), skeleton.end(), identifier);
       it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[2];
    if ((*it)[1].matched || name.rfind("wf_", 0) == 0 || name.rfind("WF_", 0) == 0)
      continue;
    if (name.rfind(fusion + "_", 0) == 0)
      name = "probe" + name.substr(fusion.size());
    names.insert(name);
  }
  return names;
}

/// A fusion whose values are named `names` (those the IR accepts): a chain of adds on an element
/// tensor and a 0-d tensor (element and once-per-chunk values alike), copied back into the tensor
/// and output.
std::unique_ptr<Fusion> fusionNaming(const std::set<std::string>& names) {
  FusionDefinition fd("probe");
  Val x = fd.defineTensor({-1}, DataType::Float, "x");
  Val z = fd.defineTensor({}, DataType::Float, "z");
  Val element = x, uniform = z;
  bool toggle = false;
  for (const std::string& name : names) {
    try { // the IR itself refuses keywords and dtype names
      if (toggle)
        element = fd.apply(OpKind::Add, {element, uniform}, {}, name);
      else
        uniform = fd.apply(OpKind::Mul, {uniform, z}, {}, name);
      toggle = !toggle;
    } catch (const Error&) {
    }
  }
  fd.copy_(element, x);
  fd.addOutput(uniform);
  return fd.finalize();
}

} // namespace

TEST(HostSyntax, AdamKernelsWithEveryTableLayout) {
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Double}) {
    auto small = optim::buildSeedAdam(mixedShapes(3), dtype);
    expectHostCompiles(*small, SegmentationMode::Batched);      // table in parameters
    expectHostCompiles(*small, SegmentationMode::PerComponent); // one-entry table
    auto large = optim::buildSeedAdam(mixedShapes(1000), dtype);
    expectHostCompiles(*large, SegmentationMode::Batched); // table in device memory
  }
}

TEST(HostSyntax, PackedStridedAndEveryOp) {
  std::set<std::pair<DataType, DataType>> bitcasts;
  expectHostCompiles(*conversionsFusion(bitcasts), SegmentationMode::Packed);
  expectHostCompiles(*broadcastFusion(), SegmentationMode::Batched);
  for (DataType dtype : kAllDataTypes) {
    std::set<OpKind> covered;
    expectHostCompiles(*allOpsFusion(dtype, covered), SegmentationMode::Batched);
  }
}

TEST(SkeletonNames, AValueMayTakeAnyNameTheSkeletonUses) {
  // A fusion value may be named like anything the skeleton declares (`begin`, `row`, the
  // kernel's own `<fusion>_class0_out`): CppNames must rename it, or a local would shadow or
  // redeclare it. The names come from kernels of every access pattern: flat and vectorized,
  // strided, packed, deferred writes, 64-bit tables.
  std::set<std::string> names;
  auto collect = [&](const Fusion& fusion, SegmentationMode mode) {
    for (const auto& [kernel, source] : emitKernels(fusion, mode))
      names.merge(skeletonIdentifiers(source, fusion.name()));
  };
  collect(*optim::buildSeedAdam(mixedShapes(3), DataType::Float), SegmentationMode::Batched);
  collect(*optim::buildSeedAdam(mixedShapes(3), DataType::BFloat16),
          SegmentationMode::PerComponent);
  collect(*broadcastFusion(), SegmentationMode::Batched);
  std::set<std::pair<DataType, DataType>> bitcasts;
  collect(*conversionsFusion(bitcasts), SegmentationMode::Packed);
  // The scan must find the skeleton's locals and types, or the check proves nothing.
  for (const char* name : {"begin", "end", "i", "chunk", "last", "row", "probe_class0_out"})
    EXPECT_TRUE(names.count(name)) << "the scan missed the skeleton's '" << name << "'";
  expectHostCompiles(*fusionNaming(names), SegmentationMode::Batched);
}
