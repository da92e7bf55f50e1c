#include "tests/fuzz/replay.h"

#include "tests/fuzz/runner.h"
#include "tests/fuzz/values.h"

#include "ir/parser.h"

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace widefuse::fuzz {
namespace {

/// "[3, 0]" -> {3, 0}.
llvm::SmallVector<int64_t, 4> parseShape(llvm::StringRef text) {
  llvm::SmallVector<int64_t, 4> shape;
  text = text.trim().drop_front().drop_back(); // the brackets
  llvm::SmallVector<llvm::StringRef, 4> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    int64_t extent = 0;
    if (part.trim().getAsInteger(10, extent))
      throw std::runtime_error(fmt::format("bad extent '{}' in a shape comment", part.str()));
    shape.push_back(extent);
  }
  return shape;
}

/// The case a regression file describes: its fusion and arguments.
FuzzCase loadCase(const std::string& text, const std::string& path, bool& expectMismatch) {
  FuzzCase result;
  result.fusion = parseFusion(text, path);
  std::map<std::string, llvm::SmallVector<int64_t, 4>> shapes;
  uint64_t seed = 1;
  expectMismatch = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    llvm::StringRef rest(line);
    if (rest.consume_front("# shape ")) {
      auto [name, shape] = rest.split(':');
      shapes[name.trim().str()] = parseShape(shape);
    } else if (rest.consume_front("# values-seed:")) {
      rest.trim().getAsInteger(10, seed);
    } else if (rest.trim() == "# expect: mismatch") {
      expectMismatch = true;
    }
  }
  std::mt19937_64 random(seed);
  for (const Value* input : result.fusion->inputs()) {
    InputData data;
    data.dtype = input->dtype();
    data.isScalar = input->isScalar();
    if (data.isScalar) {
      data.scalar = randomScalar(data.dtype, random);
    } else {
      for (int64_t extent : input->extents())
        data.shape.push_back(extent == kSymbolicExtent ? 3 : extent);
      if (auto found = shapes.find(input->name()); found != shapes.end())
        data.shape = found->second;
      data.strides = contiguousStrides(data.shape);
      data.storage.resize(size_t(numElements(data.shape) + 3) * byteSize(data.dtype));
      fillRandom(data.dtype, data.storage, random);
    }
    result.inputs[input->name()] = std::move(data);
  }
  return result;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Prints how the case behaved against its expect line; true when as expected.
bool printVerdict(const std::string& path, bool failed, bool expectMismatch,
                  const std::string& message) {
  if (failed == expectMismatch) {
    fmt::print("{}: {}\n", path,
               failed ? "still fails as expected (known bug): " + message : "passes");
    return true;
  }
  fmt::print("{}: {}\n", path,
             failed ? "FAILS: " + message
                    : "now PASSES: the bug is fixed, remove its '# expect: mismatch' line");
  return false;
}

/// Runs `path` in a child process (this executable with --replay-one); a child killed by a
/// signal is a failing case, which its expect line may name.
bool replayInChild(const std::string& path) {
  std::fflush(stdout); // the child's lines follow ours
  pid_t child = fork();
  if (child < 0)
    throw std::runtime_error(fmt::format("cannot fork to replay {}", path));
  if (child == 0) {
    const char* argv[] = {"fuzz_differential", "--replay-one", path.c_str(), nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(argv));
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child)
    throw std::runtime_error(fmt::format("lost the child replaying {}", path));
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 0;
  bool expectMismatch = false;
  std::istringstream lines(readText(path));
  for (std::string line; std::getline(lines, line);)
    expectMismatch |= llvm::StringRef(line).trim() == "# expect: mismatch";
  return printVerdict(path, true, expectMismatch,
                      fmt::format("the process died of signal {} ({})", WTERMSIG(status),
                                  strsignal(WTERMSIG(status))));
}

} // namespace

bool replayOne(const std::string& path) {
  bool expectMismatch = false;
  FuzzCase fuzzCase = loadCase(readText(path), path, expectMismatch);
  RunOutcome outcome = runCase(fuzzCase, RunnerOptions{});
  return printVerdict(path, outcome.kind != RunOutcome::Kind::Pass, expectMismatch,
                      outcome.message);
}

bool replayRegressions(const std::vector<std::string>& files) {
  bool allAsExpected = true;
  for (const std::string& path : files)
    allAsExpected &= replayInChild(path);
  return allAsExpected;
}

} // namespace widefuse::fuzz
