#pragma once
/// Values of the IR: tensors and scalars in SSA form.

#include "ir/data_type.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace widefuse {

class Expr;

/// Extent of a tensor dimension not known until run time (`?` in the text form).
inline constexpr int64_t kSymbolicExtent = -1;

/// A compile-time constant: a bool, an integer or a floating-point number. The value's data
/// type says how it is used; the payload keeps the literal exactly as written.
using ConstantValue = std::variant<bool, int64_t, double>;

/// Memory layout of a tensor input, as nvFuser describes it. Empty vectors mean the default:
/// dense row-major.
struct TensorLayout {
  /// stride_order[d] is the rank of dimension d's stride, rank-1 being the outermost (largest
  /// stride): a row-major 2-D tensor has {1, 0}.
  llvm::SmallVector<int64_t, 4> strideOrder;
  /// contiguity[d] says whether dimension d is dense relative to the next-inner dimension.
  llvm::SmallVector<bool, 4> contiguity;

  /// True when this layout is dense row-major (the default).
  bool isDefault() const;
  bool operator==(const TensorLayout&) const = default;
};

/// Whether a value is a tensor (rank >= 0) or a scalar.
enum class ValueKind : uint8_t { Tensor, Scalar };

/// A value of the IR. Tensors have a rank and extents; scalars are runtime inputs, constants,
/// or results of scalar-only expressions. Owned by its Fusion.
class Value {
public:
  /// Creates a tensor value; extents use kSymbolicExtent for `?`.
  static Value tensor(unsigned id, std::string name, DataType dtype,
                      llvm::ArrayRef<int64_t> extents, TensorLayout layout = {});
  /// Creates a scalar value. `weak` marks an untyped Python-number literal.
  static Value scalar(unsigned id, std::string name, DataType dtype,
                      std::optional<ConstantValue> constant = std::nullopt, bool weak = false);

  /// Position in the fusion's value list; stable for the fusion's lifetime.
  unsigned id() const { return id_; }
  /// SSA name, unique in the fusion.
  const std::string& name() const { return name_; }
  /// Element type.
  DataType dtype() const { return dtype_; }
  /// Tensor or scalar.
  ValueKind kind() const { return kind_; }
  bool isTensor() const { return kind_ == ValueKind::Tensor; }
  bool isScalar() const { return kind_ == ValueKind::Scalar; }
  /// Tensor rank; 0 for scalars and 0-d tensors.
  unsigned rank() const { return static_cast<unsigned>(extents_.size()); }
  /// Static extents, kSymbolicExtent where unknown. Empty for scalars and 0-d tensors.
  llvm::ArrayRef<int64_t> extents() const { return extents_; }
  /// Input layout of a tensor.
  const TensorLayout& layout() const { return layout_ ? *layout_ : defaultLayout(); }
  /// The constant payload, for constant scalars.
  const std::optional<ConstantValue>& constant() const { return constant_; }
  bool isConstant() const { return constant_.has_value(); }
  /// True for an untyped literal (and scalar expressions of literals only): it promotes like
  /// a Python number.
  bool isWeak() const { return weak_; }
  /// The expression that defines this value; null for inputs and constants.
  Expr* definition() const { return definition_; }
  /// True for a fusion input (tensor or runtime scalar).
  bool isInput() const { return isInput_; }

  /// Wires this value to the expression that defines it (set once by the Fusion).
  void setDefinition(Expr* expr) { definition_ = expr; }
  /// Marks this value as a fusion input (set once by the Fusion).
  void markInput() { isInput_ = true; }

private:
  Value() = default;
  /// The layout of a value that declares none.
  static const TensorLayout& defaultLayout() {
    static const TensorLayout none;
    return none;
  }
  unsigned id_ = 0;
  std::string name_;
  DataType dtype_ = DataType::Float;
  ValueKind kind_ = ValueKind::Scalar;
  llvm::SmallVector<int64_t, 4> extents_;
  /// Held apart, and only when not the default (inputs with a declared layout): a fusion of
  /// many parameters has millions of values.
  std::shared_ptr<const TensorLayout> layout_;
  std::optional<ConstantValue> constant_;
  bool weak_ = false;
  bool isInput_ = false;
  Expr* definition_ = nullptr;
};

/// Formats a constant as the text form writes it (`1.0`, `-2`, `true`, `inf`), without type.
std::string formatConstant(const ConstantValue& constant);

} // namespace widefuse
