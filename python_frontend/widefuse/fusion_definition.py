"""``FusionDefinition``: the subset of nvFuser's Python API that pointwise fusions use.

    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        S1 = fd.define_scalar(None, dtype=DataType.Double)
        T2 = fd.ops.mul(T0, S1)
        T3 = fd.ops.set(T2)
        fd.add_output(T3, alias_input=T0)   # T0 receives T3 when the fusion ends (copy_)
    fd.execute([array, 0.5])
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _widefuse, torch_tensors
from ._widefuse import Error
from .errors import (ArgumentTypeError, ArgumentValueError, incompatible_arguments,
                     not_an_extent)
from .data_type import DataType, data_type_of, from_torch
from .declarations import (TensorDeclaration, constant_value, layout_from_strides,
                           scalar_dtype_or_value, tensor_declaration, tensor_stride_order)
from .execution import DefinedFusion, PreparedExecution, Runner
from .operators import REDUCTION_OPS, Operators
from .values import (Scalar, Tensor, UnsupportedOperationError, Value, Vector, depends_of,
                     rebind)


# The ops without attributes by name, as the builder numbers them (its op()).
_POINTWISE_KINDS = {name: kind for kind, name in enumerate(_widefuse.op_names())
                    if name not in ("cast", "bitcast", "broadcast_in_dim", "size",
                                    "expand_blocks", "code_value", "nearest_code")
                    and name not in REDUCTION_OPS}


def _python_number(value: Any) -> Any:
    """Python numbers and NumPy scalars as Python numbers; anything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    return value


class FusionDefinition:
    """Builds one fusion with nvFuser's Python API, then runs it with execute().

    Use it as a context manager: the definition is verified and frozen when the ``with``
    block ends (a DefinedFusion, which a Runner executes). ``repr(fd)`` is nvFuser's printout
    of the definition (run it, then call its function on a new FusionDefinition, to rebuild
    the fusion).
    """

    def __init__(self, name: str = "fusion") -> None:
        self._name = name
        # The C++ builder; it makes the definition's values (Tensor, Scalar).
        self._builder: Optional[Any] = _widefuse._Definition(name, Tensor, Scalar)
        self._builder_empty = True  # nothing defined yet (a subclass's definition() may run)
        # From finalize() on: the defined fusion and what runs it.
        self._defined: Optional[DefinedFusion] = None
        self._runner: Optional[Runner] = None
        # execute()'s inputs: how many fusion inputs each one is (a define_vector(n) is n Int
        # scalars given as one list), and the vectors as (first fusion input, n) for repr().
        self._input_arity: list[int] = []
        self._vectors: list[tuple[int, int]] = []
        self._vector_names: dict[int, str] = {}  # by first fusion input
        # By handle id, each tensor input's handle (held, so that no other handle gets its id)
        # and its position in execute()'s inputs.
        self._tensor_inputs: dict[int, tuple[Any, int]] = {}
        self._in_place: dict[int, Tensor] = {}  # tensor inputs written in place, by handle id
        # The add_output and copy_ calls in order (execute()'s outputs, repr(fd)): ("output",
        # handle, stride order or None) for a plain output, ("alias", i) for the fusion's
        # in-place update i.
        self._calls: list[tuple] = []
        self._output_layouts: dict[int, Optional[list[int]]] = {}  # stride order by handle id
        # The handles fd.ops.stride_order made, by id (held, so that no other gets their id),
        # and the stride order of their plain outputs.
        self._laid_out: dict[int, tuple[Tensor, list[int]]] = {}
        # The in-place updates the builder holds, in its order: (source handle, or None for a
        # number, destination input handle).
        self._writes: list[tuple[Any, Any]] = []
        self.ops = Operators(self)
        # Tensor.mT's inputs (transposed()): a callable from a Tensor to the input that is its
        # transposed view, or None; set by the caller that binds those views.
        self.transposed_inputs: Optional[Callable[[Tensor], Optional[Tensor]]] = None

    # Building
    def __enter__(self) -> FusionDefinition:
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        if exc_type is None:
            self.finalize()
        return False

    def finalize(self) -> DefinedFusion:
        """Verifies the definition and freezes it (the end of the ``with`` block does this);
        returns the defined fusion."""
        builder = self._live()
        for tensor in self._in_place.values():  # in-place writes land when the fusion ends
            if tensor.handle is not tensor.input_handle:
                builder.copy_(tensor.handle, tensor.input_handle)
                self._writes.append((tensor.handle, tensor.input_handle))
        self._in_place.clear()
        sources, orders = self._add_plain_outputs(builder)
        self._defined = DefinedFusion(builder.finalize(), tuple(self._input_arity),
                                      MappingProxyType(dict(self._vector_names)), sources,
                                      MappingProxyType(orders))
        self._runner = Runner(self._defined)
        self._builder = None
        return self._defined

    def _add_plain_outputs(self, builder: Any) -> tuple[tuple, dict[int, list[int]]]:
        """Adds the plain outputs to the fusion, each value once, except those that return an
        input's array (see _aliased_inputs), which the kernels then need not write. Returns
        DefinedFusion's output_sources and output_orders."""
        sources: list[tuple[str, int]] = []
        orders: dict[int, list[int]] = {}
        indices: dict[int, int] = {}  # fusion output index by handle id
        # An optimizer step has in-place updates only: no aliases to look for.
        has_outputs = any(call[0] == "output" for call in self._calls)
        aliases = self._aliased_inputs() if has_outputs else {}
        for call in self._calls:
            if call[0] != "output":
                continue
            _, value, order = call
            position = None if order is not None else aliases.get(id(value))
            if position is not None:
                sources.append(("input", position))
                continue
            index = indices.get(id(value))
            if index is None:
                builder.add_output(value)
                index = indices[id(value)] = len(indices)
                if order is not None:
                    orders[index] = order
            sources.append(("output", index))
        return tuple(sources), orders

    def _aliased_inputs(self) -> dict[int, int]:
        """By handle id, the values whose plain output returns an input's array, as nvFuser
        returns it, and that input's position in execute()'s inputs: each input written in
        place (it then holds the update), and each value an in-place update writes into an
        input of its dtype and shape (the input then holds the value exactly). An output with
        a stride_order of its own is not aliased."""
        aliases: dict[int, int] = {}
        for source, destination in self._writes:
            position = self._tensor_inputs[id(destination)][1]
            aliases[id(destination)] = position
            if source is not None and source.dtype == destination.dtype and \
                    list(source.shape) == list(destination.shape):
                aliases.setdefault(id(source), position)
        return aliases

    def _live(self) -> Any:
        self._builder_empty = False
        if self._builder is None:
            raise Error("Attempting to add to a completed definition! This FusionDefinition "
                        "is finished (its `with` block ended, or its definition() ran); ops, "
                        "inputs and outputs can only be added inside it")
        return self._builder

    def define_tensor(self, shape: Sequence[int] = (), contiguity: Any = None,
                      dtype: Any = DataType.Float, is_cpu: bool = False,
                      stride_order: Optional[Sequence[int]] = None, *,
                      sizes: Optional[Sequence[int]] = None,
                      strides: Optional[Sequence[int]] = None,
                      static_sizes: bool = False) -> Tensor:
        """A tensor input, declared as nvFuser declares one.

        `shape`: -1 for an extent known only at run time. `stride_order`: the rank of each
        dimension's stride (rank-1 outermost; default row-major). `contiguity`: one bool, or
        one True/False/None per dimension listed in allocation order (outermost stride
        first; None marks a broadcast dimension). Or, instead of all three, `sizes` and
        `strides` of an example array, from which they are computed as nvFuser does (sizes
        become -1 except extents of 1, or stay as given with `static_sizes`). `is_cpu` is
        accepted and ignored: where a tensor lives is read from the array given to execute().
        """
        if sizes is not None or strides is not None:
            if shape or contiguity is not None or stride_order is not None:
                raise Error("define_tensor takes either sizes= and strides=, or shape=, "
                            "contiguity= and stride_order=, not both")
            shape, stride_order, contiguity = layout_from_strides(sizes, strides, static_sizes)
        return self.define_declared_tensors(
            tensor_declaration(shape, contiguity, dtype, stride_order))[0]

    def define_declared_tensors(self, declaration: TensorDeclaration,
                                count: int = 1) -> list[Tensor]:
        """`count` define_tensor calls of one declaration made by tensor_declaration, in one
        call of the builder: the tracer declares each layout of its arrays once and defines
        every run of inputs of that layout from it."""
        shape, order, contiguity, dtype = declaration
        builder = self._live()
        values = builder.define_tensors(count, shape, data_type_of(dtype, "define_tensor").value,
                                        order, contiguity)
        # The tracer defines every input through here: bookkeeping at C speed, and the
        # Tensors made in C++.
        first = len(self._input_arity)
        self._tensor_inputs.update(zip(map(id, values), zip(values, range(first, first + count))))
        self._input_arity.extend([1] * count)
        return builder.traced_all(self, values)

    def from_pytorch(self, tensor: Any, static_sizes: bool = False) -> Tensor:
        """A tensor input laid out and typed like the torch tensor `tensor` (nvFuser's
        from_pytorch; CPU tensors are welcome, widefuse runs on the host too)."""
        if not torch_tensors.is_tensor(tensor):
            raise ArgumentTypeError(f"from_pytorch takes a torch.Tensor, got {type(tensor).__name__}")
        dtype = from_torch(tensor.dtype)
        if dtype is None:
            raise Error(f"from_pytorch: widefuse has no data type for {tensor.dtype}")
        return self.define_tensor(sizes=tuple(tensor.shape), strides=tuple(tensor.stride()),
                                  dtype=dtype, static_sizes=static_sizes)

    def define_scalar(self, value: Any = None, dtype: Any = None) -> Scalar:
        """A runtime scalar input when `value` is None (default dtype Double), else a constant
        of `dtype` (default from the Python type: Bool, Int, Double or ComplexDouble) that must
        hold `value` exactly (floating-point and complex constants round to their type). As in
        nvFuser, ``define_scalar(DataType.Float)`` is a runtime input too. Runtime scalars
        cannot be complex (raises Error): give a 0-d tensor."""
        value, dtype = scalar_dtype_or_value(value, dtype)
        if value is None:
            data_type = DataType.Double if dtype is None else data_type_of(dtype, "define_scalar")
            if data_type.is_complex:
                raise Error(f"define_scalar(None, dtype={data_type!r}): runtime complex scalar "
                            "inputs are not supported (a kernel's scalar arguments are bool, "
                            "int or double); pass the value as a 0-d tensor "
                            f"(define_tensor(shape=[], dtype={data_type!r})) or define a "
                            "constant (define_scalar(3+0.5j))")
            builder = self._live()
            scalar = builder.traced(self, builder.define_scalar(data_type.value))
            self._input_arity.append(1)
            return scalar
        number, data_type = constant_value(value, dtype)
        if data_type.is_complex:
            # The IR's constants are real: a complex constant is the complex literal of its
            # parts cast to its type (repr(fd) prints it back as this define_scalar).
            return self.apply_op("cast", (number,), dtype=data_type)
        builder = self._live()
        return builder.traced(self, builder.constant(number, data_type.value))

    def define_vector(self, values: Any, dtype: Any = DataType.Int) -> Vector:
        """nvFuser's vector of extents, for broadcast_in_dim's shape. ``define_vector(n)`` is
        an input: n Int scalars, given to execute() as one list or tuple of n ints (a shape,
        as nvFuser and Thunder pass one); ``fd.ops.at(v, i)`` is entry i. Given a list of
        ints and Int Scalars, the vector holds them as given. Either way a Vector is a list
        of its entries."""
        if data_type_of(dtype, "define_vector") is not DataType.Int:
            raise ArgumentValueError(f"define_vector: dtype must be DataType.Int, got {dtype!r}")
        if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
            if values <= 0:
                raise ArgumentValueError(f"define_vector({values}): a vector input needs at "
                                         "least one entry")
            builder = self._live()
            name = builder.name_vector()
            entries = [builder.traced(self, builder.define_scalar(DataType.Int.value))
                       for _ in range(int(values))]
            self._vectors.append((sum(self._input_arity), int(values)))
            self._vector_names[sum(self._input_arity)] = name
            self._input_arity.append(int(values))
            return Vector(entries, name)
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise ArgumentTypeError(f"define_vector takes a size or a list of ints and Int "
                                    f"Scalars, got {type(values).__name__}")
        for index, value in enumerate(values):
            if isinstance(value, Scalar):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ArgumentTypeError(f"define_vector: {value!r} is neither an int nor an Int "
                                        "Scalar")
            if value > np.iinfo(np.int64).max:
                raise ArgumentTypeError(f"{incompatible_arguments('define_vector')} "
                                        f"define_vector: {value} in {list(values)} does not fit "
                                        "in 64 bits")
            if value < -1:  # -1: the operand's extent, in a broadcast_in_dim shape
                raise ArgumentValueError(f"{not_an_extent(int(value), index)} define_vector: "
                                         f"{value} in {list(values)} is no extent (-1 takes the "
                                         "operand's extent, else at least 0)")
        return Vector(value if isinstance(value, Scalar) else int(value) for value in values)

    def define_constant(self, value: Any, dtype: Any = None) -> Scalar:
        """nvFuser's older name for a constant define_scalar."""
        if value is None:
            raise Error("define_constant needs a value (define_scalar(None, dtype=...) declares "
                        "a runtime scalar)")
        return self.define_scalar(value, dtype)

    def _operand(self, operand: Any, op: str) -> Any:
        if isinstance(operand, Value):
            if operand.definition is not self:
                raise Error(f"{op}: value '{operand.name}' belongs to another FusionDefinition")
            return operand.handle
        operand = _python_number(operand)
        if isinstance(operand, (bool, int, float)):
            return operand
        if isinstance(operand, complex):
            return self._complex_literal(operand)
        raise ArgumentTypeError(f"{op}: arguments must be values of this definition or Python numbers, "
                    f"got {type(operand).__name__}")

    def _complex_literal(self, number: complex) -> Any:
        """The handle of a Python complex number as an operand: the op complex() of its two
        parts as untyped float literals. The result is untyped too, so it promotes as torch
        promotes a Python complex (a ComplexFloat tensor stays ComplexFloat, a Float tensor
        becomes ComplexFloat, a Double tensor ComplexDouble), and repr(fd) writes it inline as
        ``complex(re, im)``."""
        return self._live().apply("complex", [number.real, number.imag])

    def apply_op(self, op: str, operands: Sequence[Any], dtype: Optional[DataType] = None,
                 shape: Sequence[Any] = (), broadcast_dims: Sequence[int] = (),
                 dim: int = 0, block: int = 0, codebook: Optional[str] = None) -> Value:
        """Adds op `op` (its IR name) of `operands`, values of this definition or Python
        numbers; `dtype` for cast and bitcast, `shape` (ints and extent Scalars) and
        `broadcast_dims` for broadcast_in_dim, `dim` for size, `shape` and `block` for
        expand_blocks, `codebook` for code_value and nearest_code. fd.ops and the values'
        operators and methods call it."""
        if dtype is None and not shape and not broadcast_dims and not dim and not block and \
                codebook is None and op in _POINTWISE_KINDS:
            return self.pointwise(op, operands)
        values = [self._operand(operand, op) for operand in operands]
        extents = [self._operand(extent, op) if isinstance(extent, Value) else extent
                   for extent in shape]
        builder = self._live()
        result = builder.apply(op, values, None if dtype is None else dtype.value, extents,
                               list(broadcast_dims), dim, block, codebook)
        return builder.traced(self, result, depends_of(operands))

    def pointwise(self, op: str, operands: Sequence[Any]) -> Value:
        """apply_op for an op without attributes (every op but cast, bitcast,
        broadcast_in_dim and size). A traced optimizer records hundreds of thousands of
        these: the usual operands (values of this definition, Python numbers) are recorded in
        one C++ call (_widefuse.record); what it declines goes through _operand, which
        converts it (NumPy scalars, complex numbers) or refuses it by name."""
        kind = _POINTWISE_KINDS.get(op)
        if kind is None:  # an op with attributes, or none at all: apply_op says which
            return self.apply_op(op, operands)
        result = _widefuse.record(kind, operands)
        if result is not None:
            return result
        handles = tuple([self._operand(operand, op) for operand in operands])
        builder = self._live()  # raises once the definition is finished
        return builder.traced(self, builder.op(kind, handles), depends_of(operands))

    def apply_reduction(self, op: str, operands: Sequence[Tensor],
                        dims: Optional[Sequence[int]], block: Optional[int] = None) -> Tensor:
        """Adds reduction `op` (sum max min any all) of tensors `operands`, in one builder
        call: no `dims` is the tensor scope for one operand and the global scope for several;
        `dims` names the dimensions reduced, `block` the elements of each block of the block
        scope (docs/reductions.md §2). dims or a block that give no scope raise
        UnsupportedOperationError with the builder's message. fd.ops' reductions and the
        tracer's call it."""
        handles = [self._operand(operand, op) for operand in operands]
        builder = self._live()
        try:
            result = builder.reduce(op, handles, None if dims is None else list(dims), block)
        except _widefuse.ReductionScopeError as error:
            raise UnsupportedOperationError(str(error)) from None
        return builder.traced(self, result, depends_of(operands))

    def assign_in_place(self, tensor: Tensor, value: Any) -> None:
        """Writes `value` into `tensor` in place, as torch's in-place methods and ``out=`` do:
        later reads of `tensor` see it (cast to the tensor's dtype), and a tensor input
        receives its last value when the fusion ends (one copy_)."""
        if not isinstance(tensor, Tensor) or tensor.definition is not self:
            raise Error("an in-place write needs a tensor of this FusionDefinition")
        if not isinstance(value, Value) or value.definition is not self:
            raise Error(f"in-place write into '{tensor.name}': the new value must be a value of "
                        f"this definition, got {type(value).__name__}")
        self._live()
        if value.dtype is not tensor.dtype:
            value = value.to(tensor.dtype)
        rebind(tensor, value)
        destination = tensor.input_handle
        if self._tensor_inputs.get(id(destination), (None,))[0] is destination:
            self._in_place[id(destination)] = tensor

    def add_output(self, output: Value, alias_input: Optional[Tensor] = None,
                   stride_order: Optional[Sequence[int]] = None) -> None:
        """Marks `output` as a plain output, or with `alias_input` as an in-place update:
        the input receives the value when the fusion ends (torch's copy_) and execute() does
        not return it. As in nvFuser, a plain output of a value an in-place update writes
        (of its dtype and shape), or of the written input itself, returns that input's own
        array, holding the update, whether it is added before or after the update.
        `stride_order` (nvFuser's; the rank of each dimension's stride, rank-1 outermost)
        returns the output laid out that way, as ``torch.empty(...).permute(...)`` would be
        (values identical); a tensor from ``fd.ops.stride_order`` brings its own."""
        if alias_input is not None:
            if stride_order is not None:
                raise ArgumentValueError("add_output: alias_input= and stride_order= exclude "
                                         "each other (an in-place update keeps the input's "
                                         "layout)")
            self._copy(output, alias_input, "add_output")
            return
        value = self._operand(output, "add_output")
        if not isinstance(output, Value):
            raise ArgumentTypeError("add_output: an output must be a value of this definition")
        self._live()
        if not isinstance(output, Tensor):
            raise Error(f"add_output: output '{output.name}' is a scalar; outputs must be "
                        "tensors (give a 0-d tensor)")
        order = None
        if stride_order is None and id(output) in self._laid_out:
            stride_order = self._laid_out[id(output)][1]
        if stride_order is not None:
            order = tensor_stride_order(stride_order, output.ndim, "add_output")
            if order == list(range(output.ndim - 1, -1, -1)):
                order = None  # row-major: the default layout
        # nvFuser allows one value as several outputs (the fusion holds it once), in one layout.
        layout = self._output_layouts.setdefault(id(value), order)
        if layout != order:
            raise ArgumentValueError(f"add_output: '{output.name}' is already an output with "
                                     f"stride_order {layout}; one value has one output layout")
        self._calls.append(("output", value, order))

    def laid_out(self, tensor: Tensor, stride_order: Sequence[int]) -> Tensor:
        """`tensor` as a handle whose plain output comes back laid out in `stride_order` (the
        rank of each dimension's stride, as add_output's); ``fd.ops.stride_order``, the
        direct API's spelling of ``add_output(t, stride_order=...)``. The values are the
        same: in ops the handle is `tensor`."""
        self._operand(tensor, "fd.ops.stride_order")
        if not isinstance(tensor, Tensor):
            raise ArgumentTypeError(f"fd.ops.stride_order takes a Tensor, got "
                                    f"{type(tensor).__name__}")
        order = tensor_stride_order(stride_order, tensor.ndim, "fd.ops.stride_order")
        laid = self._live().traced(self, tensor.handle, tensor.depends)
        self._laid_out[id(laid)] = (laid, order)
        return laid

    def transposed(self, tensor: Tensor) -> Tensor:
        """torch's ``tensor.mT``. widefuse has no transpose op; a definition whose caller
        binds the transposed view of an argument as an input of its own (widefuse.optim: a
        grad in ``update()``) installs `transposed_inputs`, which returns that input (None:
        it has none for `tensor`). Anything else raises UnsupportedOperationError."""
        self._operand(tensor, "Tensor.mT")
        provider = self.transposed_inputs
        found = None if provider is None else provider(tensor)
        if found is None:
            raise UnsupportedOperationError(
                f"Tensor.mT of {tensor.name}: widefuse has no transpose op; it reads the mT of "
                "an optimizer's grad in widefuse.optim's update() (as a second input over the "
                "same memory), of nothing else")
        return found

    def copy_(self, source: Any, destination: Tensor) -> None:
        """In-place update (torch's copy_): the tensor input `destination` receives `source`
        when the fusion ends; reads of it before then see its entry value."""
        self._copy(source, destination, "copy_")

    def _copy(self, source: Any, destination: Tensor, op: str) -> None:
        # A traced optimizer makes one call per parameter and state tensor: the usual source
        # (a value of this definition) is read as it is, anything else goes through _operand.
        source_type = type(source)
        if (source_type is Tensor or source_type is Scalar) and source.definition is self:
            value = source.handle
        else:
            value = self._operand(source, op)
        if not isinstance(destination, Tensor) or destination.definition is not self:
            what = "alias_input" if op == "add_output" else "the destination"
            raise Error(f"{op}: {what} must be a tensor input of this definition")
        builder = self._builder
        if builder is None or self._builder_empty:
            builder = self._live()  # raises once the definition is finished
        target = destination.input_handle
        builder.copy_(value, target)
        writes = self._writes
        self._calls.append(("alias", len(writes)))
        writes.append((value if isinstance(source, Value) else None, target))

    def definition(self) -> None:
        """Override in a subclass to define the fusion with ``self.define_tensor`` ...,
        ``self.ops``, ``self.add_output`` (nvFuser's legacy style): the first execute() runs
        it. Called on FusionDefinition itself it raises NotImplementedError."""
        raise NotImplementedError("definition() should be implemented by a FusionDefinition "
                                  "subclass (or define the fusion in a `with` block)")

    def schedule(self) -> None:
        """nvFuser's user-schedule hook of a definition() subclass. widefuse schedules
        fusions itself: an override runs once, right after definition(), on the completed
        definition, so ops defined there raise as they do in nvFuser (nvFuser's scheduling
        API, ``fd.sched``, does not exist here)."""

    # Running: the Runner of the defined fusion
    def execute(self, inputs: Sequence[Any], **options: Any) -> list[Any]:
        """Runs the fusion on `inputs` and returns the plain outputs (Runner.execute: the
        options, and where each kind of array runs)."""
        return self._running("execute()").execute(inputs, **options)

    def validate(self, inputs: Sequence[Any], reference_outputs: Sequence[Any],
                 **options: Any) -> None:
        """Runs the fusion and raises AssertionError unless each output matches its reference
        (Runner.validate)."""
        self._running("validate()").validate(inputs, reference_outputs, **options)

    def prepare(self, inputs: Sequence[Any], **options: Any) -> PreparedExecution:
        """Checks, compiles and binds once; each call of the result runs one step on the same
        arrays (Runner.prepare)."""
        return self._running("prepare()").prepare(inputs, **options)

    @property
    def runner(self) -> Runner:
        """What runs the finished definition (execution.Runner): its steady state alone
        (run_steady, match_steady, launch_matched) and its DefinedFusion (`defined`), for
        callers that keep a steady state of their own (the tracer, Thunder's regions)."""
        runner = self._runner
        return runner if runner is not None else self._running("fd.runner")

    def _running(self, what: str) -> Runner:
        self._finished(what)
        return self._runner

    def _finished(self, what: str) -> DefinedFusion:
        """The defined fusion; a subclass's definition() (nvFuser's legacy style) runs here,
        the first time."""
        if self._defined is None and self._builder is not None and self._builder_empty:
            if type(self).definition is FusionDefinition.definition:
                self.definition()  # nothing was defined: NotImplementedError, as in nvFuser
            with self:
                self.definition()
            if type(self).schedule is not FusionDefinition.schedule:
                self.schedule()
        if self._defined is None:
            raise Error(f"{what} needs a finished definition: call it after the `with` block")
        return self._defined

    # Inspecting
    @property
    def name(self) -> str:
        """The fusion's name (kernels and the text form are named after it; repr(fd), like
        nvFuser's printout, does not carry it)."""
        return self._name

    def __repr__(self) -> str:
        """nvfuser_direct's printout of the definition: ``printout(api="direct")``."""
        return self.printout()

    def printout(self, api: str = "direct") -> str:
        """The definition as nvFuser's printer for `api` writes it: "direct" (nvfuser_direct:
        ``def nvfuser_fusion(fd : FusionDefinition) -> None :``, values tv0, c1, ...) or
        "legacy" (the nvfuser module: a blank line, ``def nvfuser_fusion_id0(...)``, values
        T0, S1, ...). Either runs on that API and on widefuse, and rebuilds this fusion."""
        source = self._defined.fusion if self._defined is not None else self._builder
        calls = [(call[1], call[2] or [], -1) if call[0] == "output" else (None, [], call[1])
                 for call in self._calls]
        return source.python(calls, self._vectors, api)

    def to_text(self) -> str:
        """The fusion in widefuse's text form (what `widefuse check` prints)."""
        source = self._defined.fusion if self._defined is not None else self._live()
        return source.text()

    @classmethod
    def from_text(cls, text: str, name: str = "<text>") -> FusionDefinition:
        """A finished definition parsed from the text form; errors name line and column."""
        fd = cls()
        fd._builder = None
        fusion = _widefuse._Fusion.from_text(text, name)
        fd._name = fusion.name
        fd._input_arity = [1] * len(fusion.inputs())
        fd._defined = DefinedFusion(fusion, tuple(fd._input_arity))
        fd._runner = Runner(fd._defined)
        return fd

    def fusion_ir(self) -> str:
        """The fusion before scheduling, as text (nvFuser's fusion_ir(); widefuse's text
        form)."""
        return self.to_text()

    def segments(self, mode: str = "auto") -> str:
        """The segmenter's report: components, signature classes and kernels per mode."""
        return self._finished("segments()").fusion.segments(mode)

    @property
    def phases(self) -> int:
        """How many phases a run has: 1, plus one per reduction a later expression reads in a
        row (a phase boundary, execute(phase_boundary=), runs between them)."""
        return self._finished("phases").fusion.phases

    def last_kernels(self) -> list[dict]:
        """The kernels of the last execute(): name, launches per run and CUDA source."""
        if self._runner is None:
            raise Error("last_kernels(): execute() has not run yet")
        return self._runner.last_kernels()

    def last_cuda_code(self) -> str:
        """The CUDA source of the kernels the last execute() ran."""
        return "\n".join(kernel["source"] for kernel in self.last_kernels())
