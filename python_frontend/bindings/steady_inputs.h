#pragma once
/// execute()'s steady state: the Python objects of the last accepted call, what the argument
/// reader read them as (argument_reader.h), and the prepared run bound to them. A later call
/// hands its objects straight to C++: each is compared with its predecessor (a torch tensor's
/// address, sizes, strides and dtype, a NumPy array's buffer, a number's value), a tensor that
/// moved is rebound and a number that changed is set in the prepared run, and anything else
/// sends the call back to the checked path (the argument reader), which refuses it or adopts
/// it.

#include "python_frontend/bindings/arguments/argument_reader.h"

#include "ir/arguments.h"
#include "runtime/prepared_run.h"

#include <nanobind/nanobind.h>

#include <llvm/ADT/ArrayRef.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace widefuse::python {

/// The adopted inputs of one executor. Not thread-safe: the executor lets one thread at a time
/// use it (others take the checked path).
class SteadyInputs {
public:
  /// True when the reader read every object of a call as a kind the steady state reads back:
  /// a torch.Tensor or torch.nn.Parameter, a NumPy array through the buffer protocol, or a
  /// Python bool, int or float.
  static bool adoptable(const ReadArguments& read);

  /// Adopts `objects` (execute()'s inputs, vectors spread), which the reader accepted as
  /// `read` (adoptable), with `run` prepared on them (null when runs allocate device outputs:
  /// then only the arguments are kept and each call runs them through the executor).
  void adopt(const Fusion& fusion, nanobind::handle objects, const ReadArguments& read,
             std::unique_ptr<PreparedRun> run);

  /// Whether something is adopted.
  bool adopted() const { return fusion_ != nullptr; }

  /// Compares `objects` with the adopted ones. Returns false, changing nothing, when one needs
  /// the checked path: another kind or Python type, another dtype, sizes or strides, a tensor
  /// not seen before that is not dense and unconjugated on the adopted device, a tensor that
  /// requires grad while grad mode is on, a read-only array for a copy_ destination, a new
  /// value for an output extent. Otherwise rebinds the tensors that moved and sets the
  /// numbers that changed (throwing Error, as PreparedRun does, for memory that overlaps a
  /// copy_ destination) and returns true. `held` receives the NumPy buffer views, to be kept
  /// until the launch is over. With an `order`, input i is `objects[order[i]]` (a Thunder
  /// prologue lists the tensors in its own order).
  bool match(nanobind::handle objects, std::vector<HeldBuffer>& held,
             llvm::ArrayRef<size_t> order = {});

  /// The number of the last match or adoption: a later launch asks whether nothing came in
  /// between (stillMatched).
  uint64_t generation() const { return generation_; }
  /// True when match number `generation` succeeded, nothing was matched or adopted since, and
  /// `objects` (in input order) are the matched objects and numbers: what a launch right
  /// after a prologue's match needs to skip comparing again. Tensors are compared by identity
  /// only (nothing runs between the two calls that could move them).
  bool stillMatched(uint64_t generation, nanobind::handle objects) const;

  /// The prepared run (null for runs with device outputs).
  PreparedRun* run() { return run_.get(); }
  /// The adopted arguments, as the last match left them.
  llvm::ArrayRef<Argument> arguments() const { return arguments_; }

private:
  enum class Kind : uint8_t { Number, Torch, Buffer };
  struct Slot {
    Kind kind;
    bool written = false;  ///< a copy_ destination
    bool isExtent = false; ///< a runtime scalar that is an output extent
    PyTypeObject* type = nullptr;
    /// A weak reference to the tensor or array (null for numbers): identity without keeping
    /// the memory alive between steps (a grad freed by zero_grad stays freed).
    nanobind::object weak;
    PyObject* dtype = nullptr; ///< torch tensors: the torch.dtype
    int device = -1;           ///< torch tensors: -1 CPU, else the CUDA ordinal
  };
  /// A change found by match's first pass, applied by its second.
  struct Change {
    size_t index;
    void* data;           ///< tensors: the new address
    ScalarArgument value; ///< numbers: the new value
    PyObject* object;     ///< tensors: the new object
  };
  bool compareNumber(size_t index, PyObject* object, llvm::SmallVectorImpl<Change>& changes) const;
  bool compareTorch(size_t index, PyObject* object, bool gradEnabled,
                    llvm::SmallVectorImpl<Change>& changes) const;
  bool compareBuffer(size_t index, PyObject* object, std::vector<HeldBuffer>& held,
                     llvm::SmallVectorImpl<Change>& changes) const;
  /// Rebinds and sets what match found changed; throws Error as PreparedRun does.
  void apply(llvm::ArrayRef<Change> changes);
  /// The object `slot` refers to now (null when it died).
  static PyObject* referent(const Slot& slot);

  const Fusion* fusion_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Argument> arguments_;
  std::unique_ptr<PreparedRun> run_;
  uint64_t generation_ = 0; ///< counts matches and adoptions
  uint64_t matched_ = 0;    ///< the generation of the last successful match
};

} // namespace widefuse::python
