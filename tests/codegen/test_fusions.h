#pragma once
// Fusions that exercise every op, dtype, conversion and broadcast, for the codegen tests.

#include "ir/error.h"
#include "ir/fusion_definition.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <set>

namespace widefuse::testing {

/// Cast, bitcast, broadcast_in_dim and size: ops with attributes, tested on their own.
inline bool isStructural(OpKind op) {
  return op == OpKind::Cast || op == OpKind::Bitcast || op == OpKind::BroadcastInDim ||
         op == OpKind::ExpandBlocks || op == OpKind::Size || op == OpKind::CodeValue ||
         op == OpKind::NearestCode;
}

/// Every op of ir/op_kinds.def.
inline constexpr OpKind kAllOps[] = {
#define WF_OP(Enum, name, arity, rule) OpKind::Enum,
#include "ir/op_kinds.def"
};

/// Tries `op` on operands; an Error means the typing rule excludes this combination.
inline std::optional<Val> tryApply(FusionDefinition& fd, OpKind op,
                                   llvm::ArrayRef<Operand> operands) {
  try {
    return fd.apply(op, operands);
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// One fusion per dtype: every op on tensors (element path) and on 0-d tensors whose result
/// selects between tensors (the once-per-chunk path). Records which ops were emitted.
inline std::unique_ptr<Fusion> allOpsFusion(DataType dtype, std::set<OpKind>& covered) {
  FusionDefinition fd(fmt::format("ops_{}", shortName(dtype).str()));
  Val a = fd.defineTensor({-1}, dtype, "a");
  Val b = fd.defineTensor({-1}, dtype, "b");
  Val c = fd.defineTensor({-1}, dtype, "c");
  Val condition = fd.defineTensor({-1}, DataType::Bool, "condition");
  Val za = fd.defineTensor({}, dtype, "za");
  Val zb = fd.defineTensor({}, dtype, "zb");
  Val zc = fd.defineTensor({}, dtype, "zc");
  Val zcondition = fd.defineTensor({}, DataType::Bool, "zcondition");
  for (OpKind op : kAllOps) {
    if (isStructural(op))
      continue;
    bool select = op == OpKind::Where;
    llvm::SmallVector<Operand, 3> element{select ? condition : a, select ? a : b, select ? b : c};
    llvm::SmallVector<Operand, 3> uniform{select ? zcondition : za, select ? za : zb,
                                          select ? zb : zc};
    std::optional<Val> perElement =
        tryApply(fd, op, llvm::ArrayRef<Operand>(element).take_front(opArity(op)));
    if (!perElement)
      continue;
    covered.insert(op);
    fd.addOutput(*perElement);
    Val perChunk = *tryApply(fd, op, llvm::ArrayRef<Operand>(uniform).take_front(opArity(op)));
    fd.addOutput(where(cast(perChunk, DataType::Bool), a, b));
  }
  return fd.finalize();
}

/// Every cast pair and every same-width bitcast pair, one component per source dtype.
inline std::unique_ptr<Fusion>
conversionsFusion(std::set<std::pair<DataType, DataType>>& bitcasts) {
  FusionDefinition fd("conversions");
  for (DataType from : kAllDataTypes) {
    Val x = fd.defineTensor({-1}, from, fmt::format("x_{}", shortName(from).str()));
    for (DataType to : kAllDataTypes) {
      fd.addOutput(cast(x, to));
      if (byteSize(from) == byteSize(to) && from != DataType::Bool && to != DataType::Bool) {
        fd.addOutput(bitcast(x, to));
        bitcasts.insert({from, to});
      }
    }
  }
  return fd.finalize();
}

/// code_value of u8 and i32 codes and nearest_code of f32 values, in every codebook.
inline std::unique_ptr<Fusion> codebookFusion() {
  FusionDefinition fd("codebooks");
  Val bytes = fd.defineTensor({-1}, DataType::UInt8, "bytes");
  Val words = fd.defineTensor({-1}, DataType::Int32, "words");
  Val values = fd.defineTensor({-1}, DataType::Float, "values");
  for (Codebook codebook : kAllCodebooks) {
    fd.addOutput(code_value(bytes, codebook));
    fd.addOutput(code_value(words, codebook));
    fd.addOutput(nearest_code(values, codebook));
  }
  return fd.finalize();
}

/// element_index in each kind of body: flat (members of two sizes, one class), strided (a row
/// broadcast beside it), reduced over all elements, by blocks, and of a 0-d tensor.
inline std::unique_ptr<Fusion> elementIndexFusion() {
  FusionDefinition fd("element_index");
  auto position = [](const Val& x) { return cast(element_index(x), DataType::Float); };
  for (int64_t n : {1000, 4100}) {
    Val x = fd.defineTensor({n}, DataType::Float, fmt::format("x{}", n));
    fd.addOutput(x + position(x));
    fd.addOutput(sum(position(x)));
    Val peak = max(abs(x) + position(x), Blocks{64});
    fd.addOutput(x / expand_blocks(peak, {n}, Blocks{64}));
  }
  Val grid = fd.defineTensor({8, 16}, DataType::Float, "grid");
  Val row = fd.defineTensor({16}, DataType::Float, "row");
  fd.addOutput(grid * broadcast_in_dim(row, {8, 16}, {1}) + position(grid));
  Val scalar = fd.defineTensor({}, DataType::Float, "scalar");
  fd.addOutput(scalar + position(scalar));
  return fd.finalize();
}

/// Two levels of blocks, as 4-bit state packs its codes: each 128-element block's absmax, each
/// element's 4-bit code from it, then each pair's byte (the even element's code in the high
/// nibble), a sum over blocks of 2 written to its own tensor; also a max over blocks of 32.
inline std::unique_ptr<Fusion> packedPairsFusion(int64_t n) {
  FusionDefinition fd("packed_pairs");
  Val x = fd.defineTensor({n}, DataType::Float, "x");
  Val bytes = fd.defineTensor({n / 2}, DataType::UInt8, "bytes");
  Val absmax = max(abs(x), Blocks{128});
  Val normalised = x / maximum(expand_blocks(absmax, {n}, Blocks{128}), 1e-12);
  Val code = cast(nearest_code(normalised, Codebook::Dynamic4Signed), DataType::Int32);
  Val odd = cast(bitwise_and(element_index(x), 1), DataType::Int32);
  Val shifted = shift_left(code, (1 - odd) * 4);
  fd.copy_(sum(shifted, Blocks{2}), bytes);
  fd.addOutput(absmax);
  fd.addOutput(max(normalised * normalised, Blocks{32}));
  return fd.finalize();
}

/// A strided body: a row broadcast and a 0-d broadcast.
inline std::unique_ptr<Fusion> broadcastFusion() {
  FusionDefinition fd("broadcasts");
  Val x = fd.defineTensor({8, 16}, DataType::Float, "x");
  Val row = fd.defineTensor({16}, DataType::Float, "row");
  Val column = fd.defineTensor({8}, DataType::Float, "column");
  Val scale = fd.defineTensor({}, DataType::Float, "scale");
  fd.copy_(x * broadcast_in_dim(row, {8, 16}, {1}) + broadcast_in_dim(column, {8, 16}, {0}) + scale,
           x);
  return fd.finalize();
}

} // namespace widefuse::testing
