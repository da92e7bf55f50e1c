#pragma once
/// Parameter shape lists of well-known models, computed from their public configurations (no
/// downloads, no weights), and a parser for a user's own list (`--shapes 1024x1024,4096`).
/// A preset is only shapes: nothing here allocates tensor memory. The presets are data that
/// the Python package reads too (widefuse.model_shapes): python_frontend/widefuse/
/// model_presets.json, whose text CMake embeds here (the binary needs no file at run time).

#include "tools/workloads/seed_adam.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <string>
#include <vector>

namespace widefuse::optim {

/// A named model's parameter shapes, computed from its public configuration, in the order
/// PyTorch's `named_parameters()` lists them.
struct ModelPreset {
  std::string name;
  std::string description;
  std::vector<Shape> shapes;
};

/// The presets, in the JSON's order: tiny, seed, gpt2, bert-base, vit-b16, llama-7b. Read
/// once, on first use; the references stay valid for the whole program.
llvm::ArrayRef<ModelPreset> modelPresets();

/// The text of model_presets.json, embedded at build time.
llvm::StringRef modelPresetsText();

/// The preset called `name`; throws widefuse::Error listing the preset names otherwise.
const ModelPreset& modelPreset(llvm::StringRef name);

/// Parses a comma-separated shape list such as `1024x1024,4096,3x5x2`: each item is one
/// shape, its extents separated by `x`; `scalar` is a 0-d shape (one element), while `1` is
/// the 1-d shape [1]. Extents are decimal digits only; 0 is allowed (an empty tensor).
/// Spaces around an item are ignored. Throws widefuse::Error naming the bad item (its
/// 1-based position and its text) for an empty list or item, an empty extent, a sign, a
/// non-number, or an extent, shape size or list total that does not fit in int64_t.
std::vector<Shape> parseShapeList(llvm::StringRef text);

/// Total elements of a shape list (a 0-d shape counts one). Throws widefuse::Error if the
/// total does not fit in int64_t.
int64_t totalElements(llvm::ArrayRef<Shape> shapes);

} // namespace widefuse::optim
