"""Models: load, describe, compile, run, export."""
import ctypes
import os
import re
import shutil
import statistics
import tempfile
import time
from collections import namedtuple

import numpy as np

from . import _tensor
from ._ctx import Context
from ._lib import MAX_RANK, Options, Tensor, lib, text
from .errors import ArgumentError

ValueInfo = namedtuple("ValueInfo", "name dtype shape kind", defaults=("tensor",))
ValueInfo.__doc__ = """An input or output: name, NumPy dtype (None when NumPy has
none, e.g. bfloat16), shape (ints, and strings for symbolic dims) and kind:
'tensor', or 'sequence' (a list of arrays of that dtype), 'optional' (None or
an array), 'optional sequence'; a container's dtype is its elements'."""

Node = namedtuple("Node", "name op_type inputs outputs")
Node.__doc__ = "A graph node: its name, ONNX op type and value names ('' when omitted)."

Benchmark = namedtuple("Benchmark", "median_ms min_ms max_ms runs")
ProfileEntry = namedtuple("ProfileEntry", "function nodes median_ms min_ms")


class _Handle:
    """A smelt_model* freed exactly once (close(), `with`, or garbage collection)."""

    def __init__(self, data, base_dir):
        with Context() as ctx:
            self.ptr = lib().smelt_model_load_bytes(ctx.handle, data, len(data), base_dir)
            if not self.ptr:
                raise ctx.error()

    def close(self):
        if self.ptr:
            lib().smelt_model_free(self.ptr)
            self.ptr = None

    def __del__(self):
        self.close()


def _value_info(ptr, i, is_input):
    L = lib()
    info = L.smelt_model_input_info if is_input else L.smelt_model_output_info
    dim_name = L.smelt_model_input_dim_name if is_input else L.smelt_model_output_dim_name
    name, dtype, rank, dims = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), (ctypes.c_int64 * MAX_RANK)()
    info(ptr, i, ctypes.byref(name), ctypes.byref(dtype), ctypes.byref(rank), dims)
    shape = tuple(text(dim_name(ptr, i, d)) if dims[d] < 0 else dims[d] for d in range(max(rank.value, 0)))
    code = dtype.value & 0xff  # a container's elements
    try:
        np_dtype = _tensor.numpy_dtype(code)
    except Exception:
        np_dtype = None
    return ValueInfo(text(name.value), np_dtype, shape, _tensor.kind(dtype.value))


def _io(ptr):
    L = lib()
    ins = [_value_info(ptr, i, True) for i in range(L.smelt_model_num_inputs(ptr))]
    outs = [_value_info(ptr, i, False) for i in range(L.smelt_model_num_outputs(ptr))]
    return ins, outs


def _bind_inputs(infos, feed):
    """Arrays in model order from a {name: array} feed; names are checked."""
    names = [v.name for v in infos]
    unknown = [k for k in feed if k not in names]
    if unknown:
        raise ArgumentError(f"unknown input '{unknown[0]}' (the model's inputs: {', '.join(names)})")
    missing = [n for n in names if n not in feed]
    if missing:
        raise ArgumentError(f"missing input '{missing[0]}' (the model's inputs: {', '.join(names)})")
    return [_input(feed[v.name], v) for v in infos]


_KIND_BITS = {"tensor": 0, "sequence": _tensor.SEQUENCE_BIT, "optional": _tensor.OPTIONAL_BIT,
              "optional sequence": _tensor.SEQUENCE_BIT | _tensor.OPTIONAL_BIT}


def _input(value, info):
    """An ndarray for a tensor input; a ContainerInput for a sequence or optional."""
    if info.kind == "tensor":
        return _tensor.as_input_array(value, info.name, info.dtype)
    if info.dtype is None:
        raise ArgumentError(f"input '{info.name}': its elements' type has no NumPy equivalent")
    return _tensor.ContainerInput(value, info.name, _tensor.smelt_dtype(info.dtype) | _KIND_BITS[info.kind])


def _execute(fn, ptr, infos, outputs, feed):
    """Run fn (smelt_model_run or _reference) on feed; {name: ndarray (a list
    of them for a sequence, None or one for an optional)}."""
    arrays = _bind_inputs(infos, feed)
    ins = (Tensor * max(len(arrays), 1))(*[a.tensor if isinstance(a, _tensor.ContainerInput)
                                           else _tensor.view(a) for a in arrays])
    outs = (Tensor * max(len(outputs), 1))()
    with Context() as ctx:
        ctx.check(fn(ctx.handle, ptr, ins, len(arrays), outs, len(outputs)))
    result, pending = {}, list(range(len(outputs)))
    try:
        while pending:
            i = pending.pop(0)
            result[outputs[i].name] = _tensor.take_value(outs[i])
    finally:
        for i in pending:  # a failed conversion must not leak the rest
            lib().smelt_tensor_release(ctypes.byref(outs[i]))
    return result


class Graph:
    """The model's nodes in topological order (iterable, indexable)."""

    def __init__(self, model):
        self._model = model
        L, ptr = lib(), model._handle.ptr
        self._nodes = [self._node(L, ptr, i) for i in range(L.smelt_model_num_nodes(ptr))]

    @staticmethod
    def _node(L, ptr, i):
        name, op, n_in, n_out = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        L.smelt_model_node_info(ptr, i, ctypes.byref(name), ctypes.byref(op), ctypes.byref(n_in),
                                ctypes.byref(n_out))
        ins = tuple(text(L.smelt_model_node_input(ptr, i, k)) for k in range(n_in.value))
        outs = tuple(text(L.smelt_model_node_output(ptr, i, k)) for k in range(n_out.value))
        return Node(text(name.value), text(op.value), ins, outs)

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def __getitem__(self, i):
        return self._nodes[i]

    def __repr__(self):
        return f"<smelt.Graph {len(self)} nodes>"

    def render(self, path):
        """Write the graph to path: .dot/.gv, or .svg/.png/.pdf through Graphviz."""
        with Context() as ctx:
            ctx.check(lib().smelt_model_write_graph(ctx.handle, self._model._handle.ptr,
                                                    os.fsencode(path)))

    def to_dot(self):
        """The graph in Graphviz's DOT language."""
        return self._rendered("dot").decode()

    def _repr_svg_(self):
        """SVG for Jupyter; None (no SVG) when Graphviz's dot is not installed."""
        return self._rendered("svg").decode() if shutil.which("dot") else None

    def _rendered(self, ext):
        with tempfile.TemporaryDirectory(prefix="smelt-graph-") as tmp:
            path = os.path.join(tmp, "graph." + ext)
            self.render(path)
            with open(path, "rb") as f:
                return f.read()


class Model:
    """An imported ONNX model (shapes inferred).  smelt.load() makes one."""

    def __init__(self, data, base_dir=None):
        self._bytes = bytes(data)
        self._base_dir = os.fsencode(base_dir) if base_dir else None
        self._handle = _Handle(self._bytes, self._base_dir)
        self.inputs, self.outputs = _io(self._handle.ptr)
        self._graph = None

    @property
    def graph(self):
        if self._graph is None:
            self._graph = Graph(self)
        return self._graph

    def compile(self, target="host", opt_level=2, threads=0, records=None, disabled_passes=(),
                schedule=None, dims=None):
        """Optimise, generate C, build and load it; returns a Compiled model.

        target: "host", "avx512", "avx2", "generic" or "aarch64" (packages and
        smelt check only on other hosts; the GPU targets "opencl" and "cuda"
        give packages and smelt check, not in-process models); opt_level: 0..3;
        threads: 0 for every core; records: a `smelt tune` records file whose
        best schedules to apply; disabled_passes: graph pass names to skip;
        schedule: a schedule file written by hand ("task NAME" entries and
        steps, see docs/python.md), applied before the records;
        dims: {symbolic input dim name: size}, so a model with dynamic shapes
        compiles now (and exports) for those sizes; a (min, max) tuple instead
        of a size makes a run-time dim: one compile serves every size in the
        range (smelt_model_set_dim_range); a string "OTHER+N" (or "OTHER-N",
        "OTHER") ties the dim to another (smelt_model_tie_dim), e.g. an
        attention mask's {"total": "past+1"}; without dims, such a model
        compiles one specialisation per input signature when run.
        """
        return Compiled(self, _options(target, opt_level, threads, records, disabled_passes,
                                       schedule), _dims(dims))

    def run_reference(self, inputs):
        """Run with smelt's reference kernels (slow; the correctness oracle)."""
        return _execute(lib().smelt_model_run_reference, self._handle.ptr, self.inputs,
                        self.outputs, inputs)

    def close(self):
        """Free the C model now (otherwise garbage collection does)."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<smelt.Model inputs={[v.name for v in self.inputs]} outputs={[v.name for v in self.outputs]}>"


class _OptionValues:
    """smelt_options plus the bytes its borrowed strings point into."""

    def __init__(self, target, opt_level, threads, records, passes, schedule=None):
        self.strings = [target, records, passes, schedule]  # kept alive for the C struct
        self.struct = Options()
        lib().smelt_options_init(ctypes.byref(self.struct))
        self.struct.target, self.struct.records, self.struct.disabled_passes = target, records, passes
        self.struct.schedule = schedule
        self.struct.opt_level, self.struct.num_threads = opt_level, threads


_TIE = re.compile(r"^\s*([A-Za-z_][\w.:/-]*?)\s*(?:([+-])\s*(\d+))?\s*$")


def _tie(size):
    """"past+1" -> ("past", 1); None when size is not a tie."""
    m = _TIE.match(size) if isinstance(size, str) else None
    if not m:
        return None
    return m.group(1), (int(m.group(3)) if m.group(3) else 0) * (-1 if m.group(2) == "-" else 1)


def _dims(dims):
    """{name: size} -> [(name, size)], checked."""
    if dims is None:
        return []
    if not isinstance(dims, dict):
        raise ArgumentError(f"dims must be a dict {{dim name: size}}, not {dims!r}")
    def is_int(x):
        return isinstance(x, int) and not isinstance(x, bool)

    for name, size in dims.items():
        is_range = (isinstance(size, (tuple, list)) and len(size) == 2 and all(map(is_int, size))) \
            or (isinstance(size, range) and size.step == 1)
        if not isinstance(name, str) or not (is_int(size) or is_range or _tie(size)):
            raise ArgumentError(f"dims: {name!r}: {size!r}: expected a str name and an int size, "
                                "a (min, max) range or another dim (\"past+1\")")
    return list(dims.items())


def _options(target, opt_level, threads, records, disabled_passes, schedule=None):
    if not isinstance(target, str) or not target:
        raise ArgumentError(f"target must be a non-empty string, not {target!r}")
    if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ArgumentError(f"opt_level must be 0, 1, 2 or 3, not {opt_level!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ArgumentError(f"threads must be an int >= 0 (0: every core), not {threads!r}")
    if records is not None and not os.path.isfile(records):
        raise ArgumentError(f"records file '{records}' does not exist")
    if schedule is not None and not os.path.isfile(schedule):
        raise ArgumentError(f"schedule file '{schedule}' does not exist")
    if isinstance(disabled_passes, str):
        disabled_passes = [disabled_passes]
    passes = ",".join(disabled_passes).encode() if disabled_passes else None
    return _OptionValues(target.encode(), opt_level, threads,
                         os.fsencode(records) if records is not None else None, passes,
                         os.fsencode(schedule) if schedule is not None else None)


class Compiled:
    """A compiled model, ready to run.  Model.compile() makes one.

    It owns its own C model (imported again from the model's bytes), so
    compiling one Model twice with other options gives two independent ones.
    """

    def __init__(self, model, options, dims=()):
        self._options = options
        self._handle = _Handle(model._bytes, model._base_dir)
        self.inputs, self.outputs = model.inputs, model.outputs
        with Context() as ctx:
            for name, size in dims:  # ties first: setting the base sets the tied dim
                if isinstance(size, str):
                    base, add = _tie(size)
                    ctx.check(lib().smelt_model_tie_dim(ctx.handle, self._handle.ptr, name.encode(),
                                                        base.encode(), add))
            for name, size in dims:
                if isinstance(size, str):
                    continue
                if isinstance(size, (tuple, list, range)):  # a run-time dim: MIN..MAX
                    lo, hi = (size.start, size.stop - 1) if isinstance(size, range) else size
                    ctx.check(lib().smelt_model_set_dim_range(ctx.handle, self._handle.ptr,
                                                              name.encode(), lo, hi))
                    continue
                ctx.check(lib().smelt_model_set_dim(ctx.handle, self._handle.ptr, name.encode(),
                                                    size))
            if dims:
                self.inputs, self.outputs = _io(self._handle.ptr)
            ctx.check(lib().smelt_model_compile(ctx.handle, self._handle.ptr,
                                                ctypes.byref(options.struct)))

    def run(self, inputs):
        """Run on {input name: array}; returns {output name: ndarray} in model order.

        C-contiguous arrays of the input's dtype are read in place; others
        are copied.  A wrong dtype or shape raises ArgumentError.
        """
        # no lock: the C library runs concurrent calls on one model (smelt.h)
        return _execute(lib().smelt_model_run, self._handle.ptr, self.inputs, self.outputs,
                        inputs)

    def __call__(self, **inputs):
        """run() by keyword; the output array itself when there is one, else a tuple."""
        outs = tuple(self.run(inputs).values())
        return outs[0] if len(outs) == 1 else outs

    def benchmark(self, repeat=20, warmup=3, inputs=None):
        """Latency in ms (median, min, max of `repeat` runs after `warmup`).

        inputs: a feed as for run(); default seeded random data (symbolic dims 1).
        """
        if repeat < 1 or warmup < 0:
            raise ArgumentError(f"repeat must be >= 1 and warmup >= 0 (got {repeat}, {warmup})")
        feed = inputs if inputs is not None else _random_feed(self.inputs)
        for _ in range(warmup):
            self.run(feed)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.run(feed)
            times.append((time.perf_counter() - t0) * 1e3)
        return Benchmark(statistics.median(times), min(times), max(times), repeat)

    def profile(self, repeat=10, inputs=None):
        """Where a run's time goes: every generated function timed inside whole
        runs, as ProfileEntry(function, nodes, median_ms, min_ms) over `repeat`
        runs, slowest first (`smelt bench --profile`)."""
        if repeat < 1:
            raise ArgumentError(f"repeat must be >= 1 (got {repeat})")
        feed = inputs if inputs is not None else _random_feed(self.inputs)
        self.run(feed)  # compiles, warms up
        L, ptr = lib(), self._handle.ptr
        n = L.smelt_model_num_calls(ptr)
        runs = []
        for _ in range(repeat):
            ns = (ctypes.c_int64 * max(n, 1))()
            _execute(lambda c, p, i, ni, o, no: L.smelt_model_run_profiled(c, p, i, ni, o, no, ns),
                     ptr, self.inputs, self.outputs, feed)
            runs.append(list(ns)[:n])
        entries = [ProfileEntry(L.smelt_model_call_name(ptr, k).decode(),
                                (L.smelt_model_call_nodes(ptr, k) or b"").decode(),
                                statistics.median(r[k] for r in runs) / 1e6,
                                min(r[k] for r in runs) / 1e6)
                   for k in range(n) if L.smelt_model_call_name(ptr, k)]
        return sorted(entries, key=lambda e: -e.median_ms)

    def export(self, directory, embed_weights=False):
        """Write the AOT package (model.c, model.h, weights, runtime, Makefile) into directory."""
        opts = self._options.struct
        opts.embed_weights = int(bool(embed_weights))
        os.makedirs(directory, exist_ok=True)
        with Context() as ctx:
            ctx.check(lib().smelt_model_write_package(ctx.handle, self._handle.ptr,
                                                      os.fsencode(directory), ctypes.byref(opts)))
        return directory

    def close(self):
        """Free the C model and its loaded code now."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _random_feed(infos):
    rng = np.random.default_rng(1)
    feed = {}
    for v in infos:
        shape = tuple(d if isinstance(d, int) else 1 for d in v.shape)
        if v.dtype is None:
            raise ArgumentError(f"input '{v.name}' has no NumPy dtype: pass inputs=")
        feed[v.name] = (rng.standard_normal(shape) if v.dtype.kind == "f"
                        else rng.integers(0, 2, shape)).astype(v.dtype)
    return feed


def load(source, base_dir=None):
    """Import an ONNX model from a path or from its bytes.

    base_dir: where external tensor data lives (default: the file's folder).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Model(bytes(source), base_dir)
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        from .errors import FileError
        raise FileError(f"cannot read '{path}': {e.strerror}") from None
    return Model(data, base_dir or os.path.dirname(os.path.abspath(path)))
