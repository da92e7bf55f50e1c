#include "runtime/dump_options.h"

#include "ir/error.h"

#include <llvm/ADT/SmallVector.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace widefuse {

DumpOptions parseDumpList(llvm::StringRef list) {
  DumpOptions options;
  llvm::SmallVector<llvm::StringRef, 5> items;
  list.split(items, ',', -1, false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    bool all = item == "all";
    if (all || item == "fusion")
      options.fusion = true;
    if (all || item == "segments")
      options.segments = true;
    if (all || item == "cuda")
      options.cuda = true;
    if (all || item == "ptx")
      options.ptx = true;
    if (all || item == "plan")
      options.plan = true;
    if (!all && item != "fusion" && item != "segments" && item != "cuda" && item != "ptx" &&
        item != "plan")
      fail("WIDEFUSE_DUMP: unknown item '{}': use a comma-separated list of fusion, segments, "
           "cuda, ptx, plan (or all)",
           item.str());
  }
  return options;
}

DumpOptions dumpOptionsFromEnvironment() {
  const char* list = std::getenv("WIDEFUSE_DUMP");
  DumpOptions options = parseDumpList(list ? list : "");
  if (const char* directory = std::getenv("WIDEFUSE_DUMP_DIR"); directory && *directory)
    options.directory = directory;
  return options;
}

void writeDump(const DumpOptions& options, llvm::StringRef fileName, llvm::StringRef text) {
  if (!options.directory) {
    std::fprintf(stderr, "// ---- %s ----\n%s\n", fileName.str().c_str(), text.str().c_str());
    return;
  }
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(*options.directory, error);
  fs::path path = fs::path(*options.directory) / fileName.str();
  std::ofstream file(path, std::ios::binary);
  file << text.str();
  file.close();
  if (!file)
    fail("cannot write dump file '{}'{}", path.string(),
         error ? " (" + error.message() + ")" : std::string());
}

} // namespace widefuse
