// The executor behind FusionDefinition.execute: its arguments are what the argument reader
// accepted (arguments/argument_reader.h, a _widefuse._Arguments); outputs leave as NumPy arrays
// (host) or DLPack-capable device arrays (CUDA).
#include "python_frontend/bindings/arguments/argument_reader.h"
#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/fusion_handle.h"
#include "python_frontend/bindings/steady_inputs.h"

#include "ir/error.h"
#include "ir/expr.h"
#include "ir/op_kind.h"
#include "ir/runtime_shapes.h"
#include "ir/value.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/nvrtc_library.h"
#include "runtime/fusion_executor.h"
#include "runtime/host/host_options.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// The DLPack type of `type` on a device (torch reads bool, f16, bf16 and fp8 as such).
/// Complex types are DLPack's Complex code with the width of the pair (64 or 128 bits).
nb::dlpack::dtype deviceDlpackType(DataType type) {
  using Code = nb::dlpack::dtype_code;
  auto bits = static_cast<uint8_t>(8 * byteSize(type));
  if (auto code = float8DlpackCode(type))
    return {static_cast<uint8_t>(*code), bits, 1};
  if (isComplex(type))
    return {static_cast<uint8_t>(Code::Complex), bits, 1};
  if (type == DataType::Bool)
    return {static_cast<uint8_t>(Code::Bool), bits, 1};
  if (type == DataType::BFloat16)
    return {static_cast<uint8_t>(Code::Bfloat), bits, 1};
  if (isFloatingPoint(type))
    return {static_cast<uint8_t>(Code::Float), bits, 1};
  if (isUnsignedInteger(type))
    return {static_cast<uint8_t>(Code::UInt), bits, 1};
  return {static_cast<uint8_t>(Code::Int), bits, 1};
}

/// The NumPy stand-in for `type` on the host: an unsigned integer of the same width for bool,
/// f16, bf16 and fp8, which the Python side views as the real dtype (NumPy has no bf16 or
/// fp8, and its DLPack import of bool and f16 varies between versions). Complex types are
/// NumPy's complex64 and complex128.
nb::dlpack::dtype hostDlpackType(DataType type) {
  if (type == DataType::Bool || isNarrowFloat(type))
    return {static_cast<uint8_t>(nb::dlpack::dtype_code::UInt),
            static_cast<uint8_t>(8 * byteSize(type)), 1};
  return deviceDlpackType(type);
}

std::vector<size_t> sizesOf(llvm::ArrayRef<int64_t> shape) {
  return std::vector<size_t>(shape.begin(), shape.end());
}

nb::object hostArray(HostTensor tensor) {
  // NumPy wants a non-null address even for an empty array.
  alignas(16) static std::byte emptyStorage[16];
  auto* owned = new HostTensor(std::move(tensor));
  nb::capsule owner(owned,
                    [](void* pointer) noexcept { delete static_cast<HostTensor*>(pointer); });
  void* data = owned->numel() != 0 ? owned->data() : static_cast<void*>(emptyStorage);
  std::vector<size_t> shape = sizesOf(owned->shape());
  return nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr,
                                hostDlpackType(owned->dtype()))
      .cast();
}

/// A stream from Python (a CUstream's address; None: the executor's default stream).
std::optional<void*> streamOf(std::optional<uintptr_t> stream) {
  if (!stream)
    return std::nullopt;
  return reinterpret_cast<void*>(*stream);
}

nb::list hostArrays(RunResult result) {
  nb::list outputs;
  for (HostTensor& tensor : result.outputs)
    outputs.append(hostArray(std::move(tensor)));
  return outputs;
}

/// The Python object a phase boundary calls, shared by the executor (which shows it to the
/// garbage collector) and the copies of the boundary its loaded fusions hold; null: none.
using HeldCallable = std::shared_ptr<nb::object>;

/// `callable` held for a boundary: copies of the boundary travel with the executor's loaded
/// fusions, made and dropped without the GIL, so they share one reference, released with it.
HeldCallable holdCallable(nb::object callable) {
  if (callable.is_none())
    return nullptr;
  return HeldCallable(new nb::object(std::move(callable)), [](nb::object* object) {
    nb::gil_scoped_acquire acquire;
    delete object;
  });
}

/// `held` (null: no boundary) as the executor's phase boundary: called, with the GIL,
/// as held(phase, kept, stream) where `kept` lists (name, reduction, dtype, array) per kept
/// result, the array a view of the executor's memory valid during the call (NumPy's, with
/// hostDlpackType's stand-ins, on the host; DLPack on the device) that the callable may
/// rewrite in place, and `stream` the step's CUstream (0 on the host).
PhaseBoundary phaseBoundaryOf(HeldCallable held, bool onDevice) {
  if (!held)
    return {};
  return [held, onDevice](const PhaseResults& results) {
    nb::gil_scoped_acquire acquire;
    nb::list kept;
    for (size_t i = 0; i < results.values.size(); ++i) {
      const TensorRef& memory = results.memory[i];
      std::vector<size_t> shape = sizesOf(memory.shape);
      nb::object array;
      if (onDevice)
        array = nb::ndarray<nb::array_api>(memory.data, shape.size(), shape.data(), nb::handle(),
                                           nullptr, deviceDlpackType(memory.dtype),
                                           nb::device::cuda::value, 0)
                    .cast(nb::rv_policy::reference);
      else
        array = nb::ndarray<nb::numpy>(memory.data, shape.size(), shape.data(), nb::handle(),
                                       nullptr, hostDlpackType(memory.dtype))
                    .cast(nb::rv_policy::reference);
      const Value& value = *results.values[i];
      kept.append(nb::make_tuple(value.name(), opName(value.definition()->op()).str(),
                                 shortName(memory.dtype).str(), array));
    }
    if (!held->is_none()) // cleared by the garbage collector (heldClear)
      (*held)(results.phase, kept, reinterpret_cast<uintptr_t>(results.stream));
  };
}

/// A run prepared once for arguments that stay in place (PreparedRun): each launch skips every
/// check. Holds the buffer views of its NumPy arguments (and what the reader made to read
/// them); the Python side holds the arrays.
class PyPreparedRun {
public:
  PyPreparedRun(std::unique_ptr<PreparedRun> run, ReadArguments& read,
                std::shared_ptr<const Fusion> fusion, HeldCallable boundary)
      : fusion_(std::move(fusion)), run_(std::move(run)), held_(std::move(read.held)),
        keep_(std::move(read.keep)), boundary(std::move(boundary)) {}

  /// Tensor arguments `indices[i]` now at `addresses[i]`, laid out as before (a new grad).
  void rebind(const std::vector<size_t>& indices, const std::vector<uintptr_t>& addresses) {
    if (indices.size() != addresses.size())
      fail("rebind: {} indices for {} addresses", indices.size(), addresses.size());
    for (size_t i = 0; i < indices.size(); ++i)
      run_->rebindTensor(indices[i], reinterpret_cast<void*>(addresses[i]));
  }

  /// Runtime scalar arguments `indices[i]` now `values[i]` (a scheduled learning rate), read
  /// as execute() reads a number (`torchTypes`, `numpyTypes`: the reader's dtype tables).
  /// None, or the refusal of the first value refused (nothing set from it on).
  nb::object setScalars(const std::vector<size_t>& indices, const nb::list& values,
                        nb::handle torchTypes, nb::handle numpyTypes) {
    if (indices.size() != values.size())
      fail("set_scalars: {} indices for {} values", indices.size(), values.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] >= fusion_->inputs().size())
        fail("set_scalars: fusion '{}' has {} inputs, not an input {}", fusion_->name(),
             fusion_->inputs().size(), indices[i]);
      const Value& input = *fusion_->inputs()[indices[i]];
      ScalarArgument scalar;
      bool exact = false;
      Refusal refusal;
      if (!readScalar(values[i].ptr(), input, {torchTypes.ptr(), numpyTypes.ptr()}, scalar, exact,
                      refusal)) {
        refusal.index = indices[i];
        refusal.name = input.name();
        return nb::cast(std::move(refusal));
      }
      run_->setScalar(indices[i], scalar);
    }
    return nb::none();
  }

  /// One step on `stream` (None: the executor's default stream).
  nb::list launch(std::optional<uintptr_t> stream) {
    RunResult result;
    {
      nb::gil_scoped_release release;
      result = run_->launch(streamOf(stream));
    }
    return hostArrays(std::move(result));
  }

private:
  std::shared_ptr<const Fusion> fusion_; // declared first: outlives the run
  std::unique_ptr<PreparedRun> run_;
  std::vector<HeldBuffer> held_;
  std::vector<nb::object> keep_;

public:
  /// The phase boundary's callable, for the garbage collector (heldTraverse).
  HeldCallable boundary;
};

/// Compiles a fusion once per specialization and runs it (FusionExecutorCache). One executor
/// serves every stream: each call names its own (`stream`, the constructor's: for calls that
/// name none).
class PyExecutor {
public:
  PyExecutor(const FusionHandle& handle, const std::string& backend, const std::string& mode,
             const std::string& blockOrder, const std::string& hostExecution, unsigned threads,
             bool fmad, const std::optional<std::string>& arch, uintptr_t stream,
             nb::object phaseBoundary, int device)
      : fusion_(handle.fusion) {
    ExecutorOptions options;
    options.backend = backend;
    options.mode = parseMode(mode);
    options.host.blockOrder = parseBlockOrder(blockOrder);
    options.host.execution = parseHostExecution(hostExecution);
    options.host.threads = threads; // 0: one per core
    options.cuda.fmad = fmad;
    options.arch = arch;
    options.cuda.stream = reinterpret_cast<void*>(stream);
    options.cuda.device = device; // for arguments all in host memory
    options.components = handle.components;
    boundary = holdCallable(std::move(phaseBoundary));
    options.phaseBoundary = phaseBoundaryOf(boundary, backend == "cuda");
    options_ = options;
    cache_ = std::make_unique<FusionExecutorCache>(*fusion_, std::move(options));
  }

  std::string backend() const { return cache_->backendName().str(); }

  /// One run of arguments the reader accepted, on `stream` (a CUstream; None: the
  /// executor's default stream).
  nb::list run(const ReadArguments& read, bool deviceOutputs, std::optional<uintptr_t> stream) {
    if (deviceOutputs && !fusion_->outputs().empty())
      return deviceArrays(read.arguments, streamOf(stream));
    RunResult result;
    {
      nb::gil_scoped_release release;
      result = cache_->run(read.arguments, {}, streamOf(stream));
    }
    return hostArrays(std::move(result));
  }

  /// execute()'s checked path: `read`, what the argument reader accepted of `objects` (the
  /// inputs, vectors spread). Runs them, and adopts them as the steady state when the steady
  /// state can read them back (and no other thread is using it). `stream`: as run()'s; the
  /// steady state is not tied to it (each call names its own).
  nb::list runChecked(const ReadArguments& read, nb::handle objects, bool deviceOutputs,
                      std::optional<uintptr_t> stream) {
    std::unique_lock<std::mutex> lock(steadyMutex_, std::try_to_lock);
    if (!lock.owns_lock() || !SteadyInputs::adoptable(read)) {
      if (lock.owns_lock())
        steady_ = SteadyInputs(); // forget the last inputs: they are not these
      return run(read, deviceOutputs, stream);
    }
    if (deviceOutputs && !fusion_->outputs().empty()) {
      nb::list outputs = deviceArrays(read.arguments, streamOf(stream));
      steady_.adopt(*fusion_, objects, read, nullptr);
      return outputs;
    }
    std::unique_ptr<PreparedRun> prepared;
    {
      nb::gil_scoped_release release;
      prepared = cache_->prepare(read.arguments, streamOf(stream));
    }
    steady_.adopt(*fusion_, objects, read, std::move(prepared));
    return launchSteady(streamOf(stream));
  }

  /// execute()'s steady state: the outputs when `objects` are the adopted inputs or differ
  /// only in what a prepared run rebinds (see SteadyInputs::match), else None (the caller
  /// takes the checked path). Runs on `stream` (None: the executor's default stream).
  nb::object runSteady(nb::handle objects, std::optional<uintptr_t> stream) {
    std::unique_lock<std::mutex> lock(steadyMutex_, std::try_to_lock);
    if (!lock.owns_lock() || !steady_.adopted())
      return nb::none();
    std::vector<HeldBuffer> held; // released after the launch, with the GIL held
    if (!steady_.match(objects, held))
      return nb::none();
    ++steadyRuns_;
    if (!steady_.run())
      return deviceArrays(steady_.arguments(), streamOf(stream));
    return launchSteady(streamOf(stream));
  }

  /// The steady state's comparison alone, ahead of the launch (a Thunder prologue's check):
  /// `objects[order[i]]` is input i. Returns a token for launchMatched when they match (the
  /// moved tensors rebound, the changed numbers set), else None. Only tensors and numbers
  /// the steady state reads back in memory are matched (NumPy buffers are not held).
  nb::object matchSteady(nb::handle objects, const std::vector<size_t>& order) {
    std::unique_lock<std::mutex> lock(steadyMutex_, std::try_to_lock);
    if (!lock.owns_lock() || !steady_.adopted() || !steady_.run())
      return nb::none();
    std::vector<HeldBuffer> held;
    if (!steady_.match(objects, held, order) || !held.empty())
      return nb::none(); // a buffer would have to stay held until the launch
    return nb::int_(steady_.generation());
  }

  /// The launch after matchSteady returned `token`: the outputs when nothing was matched or
  /// adopted since and `objects` (in input order) are the matched ones, else None.
  nb::object launchMatched(nb::handle objects, uint64_t token, std::optional<uintptr_t> stream) {
    std::unique_lock<std::mutex> lock(steadyMutex_, std::try_to_lock);
    if (!lock.owns_lock() || !steady_.run() || !steady_.stillMatched(token, objects))
      return nb::none();
    ++matchedLaunches_;
    return launchSteady(streamOf(stream));
  }
  /// Launches by launchMatched so far.
  size_t matchedLaunches() const { return matchedLaunches_; }

  /// Checks, compiles and binds once; the arguments (`read`, whose buffer views the result
  /// takes) must stay where they are. `stream`: that of the first launch (a specialization is
  /// not loaded while it captures). `outputs`: the arrays every launch writes the plain
  /// outputs into, as read_outputs read them (None: each launch returns new host arrays).
  PyPreparedRun prepare(ReadArguments& read, std::optional<uintptr_t> stream,
                        const ReadArguments* outputs) {
    std::vector<TensorRef> given;
    if (outputs)
      for (const Argument& output : outputs->arguments)
        given.push_back(std::get<TensorRef>(output));
    std::unique_ptr<PreparedRun> run;
    {
      nb::gil_scoped_release release;
      run = cache_->prepare(read.arguments, streamOf(stream), given);
    }
    return PyPreparedRun(std::move(run), read, fusion_, boundary);
  }

  nb::list lastKernels() const {
    nb::list kernels;
    // Every phase's kernels, in phase order.
    std::shared_ptr<const CompiledFusion> compiled = cache_->lastCompiled();
    if (!compiled)
      return kernels;
    for (const FusionKernel& kernel : compiled->kernels) {
      nb::dict facts;
      facts["name"] = kernel.plan->name;
      facts["launches"] = kernel.launches;
      facts["source"] = kernel.source;
      kernels.append(facts);
    }
    return kernels;
  }

  size_t numSpecializations() const { return cache_->numSpecializations(); }
  /// Calls run by the steady state so far (tests tell the paths apart with it).
  size_t steadyRuns() const { return steadyRuns_; }

private:
  /// One launch of the steady state's prepared run on `stream` (steadyMutex_ held).
  nb::list launchSteady(std::optional<void*> stream) {
    RunResult result;
    {
      nb::gil_scoped_release release;
      result = steady_.run()->launch(stream);
    }
    return hostArrays(std::move(result));
  }

  nb::list deviceArrays(llvm::ArrayRef<Argument> arguments, std::optional<void*> stream) {
    nb::list outputs;
    for (nb::object& output : runWithDeviceOutputs(arguments, stream))
      outputs.append(output);
    return outputs;
  }

  /// Plain outputs allocated in device memory and handed over as DLPack-capable arrays; the
  /// kernels run on `stream`.
  std::vector<nb::object> runWithDeviceOutputs(llvm::ArrayRef<Argument> arguments,
                                               std::optional<void*> stream) {
    checkArguments(*fusion_, arguments);
    RuntimeShapes shapes = inferRuntimeShapes(*fusion_, arguments);
    const Backend& device = *findBackend("cuda");
    // On the arguments' device, where the run goes.
    Placement where{device.deviceOf(*fusion_, arguments, options_), stream};
    std::vector<KeptTensor> buffers;
    std::vector<TensorRef> outputs;
    for (const Value* output : fusion_->outputs()) {
      buffers.push_back(device.allocate(output->dtype(), shapes.of(output), where, options_));
      outputs.push_back(buffers.back().ref);
    }
    {
      nb::gil_scoped_release release;
      cache_->run(arguments, outputs, stream);
    }
    std::vector<nb::object> arrays;
    for (size_t i = 0; i < outputs.size(); ++i) {
      // The array owns its memory: the capsule holds the last reference.
      auto* memory = new std::shared_ptr<void>(std::move(buffers[i].owner));
      nb::capsule owner(memory, [](void* pointer) noexcept {
        delete static_cast<std::shared_ptr<void>*>(pointer);
      });
      std::vector<size_t> shape = sizesOf(outputs[i].shape);
      arrays.push_back(nb::ndarray<nb::array_api>(outputs[i].data, shape.size(), shape.data(),
                                                  owner, outputs[i].strides.data(),
                                                  deviceDlpackType(outputs[i].dtype),
                                                  nb::device::cuda::value, where.device)
                           .cast());
    }
    return arrays;
  }

public:
  /// The phase boundary's callable, for the garbage collector (heldTraverse).
  HeldCallable boundary;

private:
  std::shared_ptr<const Fusion> fusion_; // declared first: outlives the cache
  /// The options the cache was made with (where device outputs are allocated).
  ExecutorOptions options_;
  std::unique_ptr<FusionExecutorCache> cache_;
  /// Guards steady_; a thread that finds it taken runs on the checked path instead (waiting
  /// would deadlock: the holder needs the GIL back after its launch).
  std::mutex steadyMutex_;
  SteadyInputs steady_; // declared after cache_: its prepared run goes first
  size_t steadyRuns_ = 0;
  size_t matchedLaunches_ = 0;
};

/// The backend `name` runs arguments on, of which `onDevice` says whether one is in device
/// memory (as the argument reader read it): `auto`'s rule is backendForPlacement's; a named
/// backend must read where the arguments are.
std::string selectBackend(const std::string& name, bool onDevice) {
  const Backend* backend = findBackend(name);
  const Backend& device = backendForPlacement(true);
  if (!backend)
    return backendForPlacement(onDevice).name().str();
  if (onDevice && backend != &device)
    fail("backend '{}' cannot read CUDA arrays; use backend='{}'", name, device.name().str());
  return name;
}

/// The garbage collector's view of an object holding a phase boundary's callable: a
/// boundary that refers back to its fusion (a closure over it) makes a cycle through C++.
template <typename Holder> int heldTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self))
    return 0;
  if (const HeldCallable& held = nb::inst_ptr<Holder>(self)->boundary)
    Py_VISIT(held->ptr());
  return 0;
}

template <typename Holder> int heldClear(PyObject* self) {
  if (const HeldCallable& held = nb::inst_ptr<Holder>(self)->boundary)
    *held = nb::none();
  return 0;
}

template <typename Holder>
PyType_Slot heldSlots[] = {{Py_tp_traverse, reinterpret_cast<void*>(heldTraverse<Holder>)},
                           {Py_tp_clear, reinterpret_cast<void*>(heldClear<Holder>)},
                           {0, nullptr}};

} // namespace

void bindExecutor(nb::module_& module) {
  nb::class_<PyPreparedRun>(module, "_PreparedRun", "A run prepared once, launched many times.",
                            nb::type_slots(heldSlots<PyPreparedRun>))
      .def("launch", &PyPreparedRun::launch, nb::arg("stream").none() = nb::none(),
           "One step on `stream` (a CUstream address; None: the executor's); returns the plain "
           "outputs.")
      .def("rebind", &PyPreparedRun::rebind, nb::arg("indices"), nb::arg("addresses"),
           "Points tensor arguments at new memory laid out as before.")
      .def("set_scalars", &PyPreparedRun::setScalars, nb::arg("indices"), nb::arg("values"),
           nb::arg("torch_types"), nb::arg("numpy_types"),
           "Sets runtime scalar arguments for the following launches; None, or the _Refusal "
           "of a value.");
  nb::class_<PyExecutor>(module, "_Executor", "Runs one fusion; compiles once per specialization.",
                         nb::type_slots(heldSlots<PyExecutor>))
      .def(nb::init<const FusionHandle&, const std::string&, const std::string&, const std::string&,
                    const std::string&, unsigned, bool, const std::optional<std::string>&,
                    uintptr_t, nb::object, int>(),
           nb::arg("fusion"), nb::arg("backend"), nb::arg("mode"), nb::arg("block_order"),
           nb::arg("host_execution"), nb::arg("threads"), nb::arg("fmad"), nb::arg("arch").none(),
           nb::arg("stream") = 0, nb::arg("phase_boundary").none() = nb::none(),
           nb::arg("device") = 0)
      .def_prop_ro("backend", &PyExecutor::backend)
      .def("run", &PyExecutor::run, nb::arg("arguments"), nb::arg("device_outputs"),
           nb::arg("stream").none() = nb::none())
      .def("run_checked", &PyExecutor::runChecked, nb::arg("arguments"), nb::arg("objects"),
           nb::arg("device_outputs"), nb::arg("stream").none() = nb::none(),
           "Runs read arguments on `stream` and adopts their objects as the steady state.")
      .def("match_steady", &PyExecutor::matchSteady, nb::arg("objects"), nb::arg("order"),
           "The steady state's comparison alone: a token for launch_matched, else None.")
      .def("launch_matched", &PyExecutor::launchMatched, nb::arg("objects"), nb::arg("token"),
           nb::arg("stream").none() = nb::none(),
           "The outputs of a launch right after match_steady, else None.")
      .def_prop_ro("matched_launches", &PyExecutor::matchedLaunches,
                   "Launches right after a match_steady (widefuse.thunder.jit) so far.")
      .def("run_steady", &PyExecutor::runSteady, nb::arg("objects"),
           nb::arg("stream").none() = nb::none(),
           "The outputs (run on `stream`) when the objects match the steady state, else None.")
      .def("prepare", &PyExecutor::prepare, nb::arg("arguments"),
           nb::arg("stream").none() = nb::none(), nb::arg("outputs").none() = nb::none(),
           nb::keep_alive<0, 1>(),
           "Checks, compiles and binds once for arguments that stay in place; `outputs`: "
           "where every launch writes the plain outputs.")
      .def("last_kernels", &PyExecutor::lastKernels,
           "The kernels of the last run: name, launches per run, CUDA source.")
      .def("num_specializations", &PyExecutor::numSpecializations)
      .def_prop_ro("steady_runs", &PyExecutor::steadyRuns,
                   "Calls run by the steady state (no Python-side checks) so far.");
  module.def("select_backend", &selectBackend, nb::arg("name"), nb::arg("on_device"),
             "The backend `name` ('auto' or a backend) runs arguments on, one of which is in "
             "device memory when `on_device`; Error where it cannot read them.");
  module.def(
      "host_executions",
      [] {
        std::vector<std::string> names;
        for (llvm::StringRef name : hostExecutionNames())
          names.push_back(name.str());
        return names;
      },
      "The host backend's executions (host_execution=), the default first.");
  module.def(
      "cuda_available", [] { return findBackend("cuda")->available(); },
      "True when a CUDA device can be used.");
  module.def(
      "add_nvrtc_package_directories",
      [](const std::vector<std::string>& directories) {
        NvrtcLibrary::addPackageDirectories(directories);
      },
      nb::arg("directories"),
      "Directories of the `nvidia` package (pip's CUDA wheels) where the CUDA backend also "
      "looks for NVRTC; only a choice of NVRTC made afterwards sees them.");
  module.def("nvrtc_candidate_paths", &NvrtcLibrary::candidatePaths,
             "The paths the CUDA backend considers for NVRTC, in search order.");
  module.def(
      "prepare_host_compiler", [] { findBackend("host")->warmUp(); },
      "Starts building the host backend's precompiled prelude in the background when the "
      "kernel cache lacks it: a caller about to record a fusion for the host calls it first.");
}

} // namespace widefuse::python
