#include "scheduler/cpp_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace widefuse {
namespace {

/// C++ keywords, CUDA built-ins and the names the kernel skeleton declares locally.
constexpr llvm::StringLiteral kReserved[] = {
    "alignas",     "alignof",    "and",          "asm",      "auto",     "bool",
    "break",       "case",       "catch",        "char",     "class",    "const",
    "constexpr",   "const_cast", "continue",     "decltype", "default",  "delete",
    "do",          "double",     "dynamic_cast", "else",     "enum",     "explicit",
    "export",      "extern",     "false",        "float",    "for",      "friend",
    "goto",        "if",         "inline",       "int",      "long",     "mutable",
    "namespace",   "new",        "noexcept",     "not",      "nullptr",  "operator",
    "or",          "private",    "protected",    "public",   "register", "reinterpret_cast",
    "return",      "short",      "signed",       "sizeof",   "static",   "static_assert",
    "static_cast", "struct",     "switch",       "template", "this",     "throw",
    "true",        "try",        "typedef",      "typeid",   "typename", "union",
    "unsigned",    "using",      "virtual",      "void",     "volatile", "while",
    "xor",         "threadIdx",  "blockIdx",     "blockDim", "gridDim",  "warpSize",
    "min",         "max",        "in",           "out",      "u",        "entry",
    "params",      "member",     "chunk",        "begin",    "end",      "i",
    "k",           "tail_begin", "aligned",      "table",    "index",    "rest",
    "main",        "NULL",       "assert",       "b8",       "i8",       "i16",
    "i32",         "i64",        "u8",           "u16",      "u32",      "f16",
    "bf16",        "f32",        "f64",          "f8e4m3fn", "f8e5m2",   "f8e8m0fnu",
    "c64",         "c128"};

/// Prefixes of the prelude and of the implementation.
bool hasReservedPrefix(llvm::StringRef name) {
  return name.startswith("wf_") || name.startswith("WF_") || name.startswith("_");
}

} // namespace

bool isReservedCppName(llvm::StringRef name) {
  if (hasReservedPrefix(name))
    return true;
  return std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved);
}

std::string CppNames::claim(llvm::StringRef base) {
  // A prefix cannot be fixed by a suffix: move such names out of the reserved prefixes.
  bool kernelName = !kernelPrefix_.empty() && base.startswith(kernelPrefix_);
  std::string stem = hasReservedPrefix(base) || kernelName ? "v" + base.str() : base.str();
  std::string candidate = stem;
  for (unsigned suffix = 1; isReservedCppName(candidate) || taken_.count(candidate); ++suffix)
    candidate = fmt::format("{}_{}", stem, suffix);
  taken_.insert(candidate);
  return candidate;
}

} // namespace widefuse
