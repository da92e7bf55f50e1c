#pragma once
/// What the pipeline dumps (`WIDEFUSE_DUMP=fusion,segments,plan,cuda,ptx`) and where
/// (`WIDEFUSE_DUMP_DIR`, or the CLI's `--dump-dir`; standard error when neither is set).

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace widefuse {

/// The dumps the pipeline writes after each stage.
struct DumpOptions {
  bool fusion = false;   ///< the fusion's text form
  bool segments = false; ///< the segmenter's report
  bool cuda = false;     ///< each kernel's .cu
  bool ptx = false;      ///< each kernel's .ptx
  bool plan = false;     ///< each kernel plan
  /// Directory for dump files; standard error when unset.
  std::optional<std::string> directory;

  /// True when anything is dumped.
  bool any() const { return fusion || segments || cuda || ptx || plan; }
};

/// Parses a WIDEFUSE_DUMP list (`cuda,ptx`, or `all`). Throws Error naming an unknown item
/// and listing the valid ones.
DumpOptions parseDumpList(llvm::StringRef list);

/// The dumps the environment asks for (WIDEFUSE_DUMP, WIDEFUSE_DUMP_DIR).
DumpOptions dumpOptionsFromEnvironment();

/// Writes one dump: to `<directory>/<fileName>` (creating the directory), or to standard
/// error under a `// ---- fileName ----` line. Throws Error when the file cannot be written.
void writeDump(const DumpOptions& options, llvm::StringRef fileName, llvm::StringRef text);

} // namespace widefuse
