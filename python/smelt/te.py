"""User-written operators: tensor expressions and schedules (TVM-like).

    import smelt
    from smelt import te
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis(K, name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = smelt.create_schedule(C)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].vectorize(ji)
    print(smelt.lower(s, [A, B, C]))
    f = smelt.build(s, [A, B, C], target="host")
    f(a, b, c)                        # NumPy arrays; c is written

Expressions are recorded in Python; smelt.create_schedule turns the tensors
its outputs need into a C graph (smelt_te.h), where every step is checked.
"""
import builtins as _builtins
import ctypes
import itertools
import numbers
import threading

import numpy as np

from ._lib import lib, text
from ._tensor import numpy_dtype, smelt_dtype
from .errors import ArgumentError, error_for_status

__all__ = ["placeholder", "compute", "reduce_axis", "sum", "max", "min", "prod", "select",
           "if_then_else", "cast", "const", "exp", "log", "sqrt", "tanh", "erf", "sigmoid",
           "abs", "floor", "ceil", "round", "sin", "cos", "pow", "fmod", "isnan", "isinf",
           "equal", "not_equal", "all", "any", "Tensor", "Expr", "IterVar", "ReduceAxis",
           "Schedule", "Stage", "Function", "create_schedule", "lower", "build", "register_op"]

_P = ctypes.c_void_p
_BOOL, _INT64 = 9, 7

# smelt_te_binop
_BIN = {"add": 0, "sub": 1, "mul": 2, "div": 3, "mod": 4, "floordiv": 5, "floormod": 6,
        "min": 7, "max": 8, "eq": 9, "ne": 10, "lt": 11, "le": 12, "gt": 13, "ge": 14,
        "and": 15, "or": 16}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_REDUCE = {"sum": 0, "prod": 1, "max": 2, "min": 3}
_FLOATS = {1, 10, 11, 16}


def _code(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "bfloat16":
        return 16
    return smelt_dtype(dtype)


def _dtype_name(code):
    return "bfloat16" if code == 16 else str(numpy_dtype(code))


# ---- expressions ---------------------------------------------------------------

class Expr:
    """A scalar expression; build with operators and the functions here."""
    __slots__ = ("kind", "args", "code")

    def __init__(self, kind, args, code):
        self.kind, self.args, self.code = kind, args, code

    @property
    def dtype(self):
        return _dtype_name(self.code)

    def astype(self, dtype):
        return cast(self, dtype)

    def _bin(self, op, other, swap=False):
        a, b = _wrap(self), _wrap(other, like=self)
        if swap:
            a, b = b, a
        return Expr("bin", (op, a, b), _BOOL if op in _COMPARE else a.code)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __mod__(self, o): return self._bin("floormod", o)
    def __rmod__(self, o): return self._bin("floormod", o, True)
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __and__(self, o): return self._bin("and", o)
    def __rand__(self, o): return self._bin("and", o, True)
    def __or__(self, o): return self._bin("or", o)
    def __ror__(self, o): return self._bin("or", o, True)
    def __neg__(self): return Expr("neg", (self,), self.code)
    def __invert__(self): return Expr("not", (self,), _BOOL)

    def __bool__(self):
        raise TypeError("a smelt.te expression has no truth value (use te.select, &, |)")

    __hash__ = object.__hash__


def _wrap(v, like=None):
    """Python numbers become constants of the other operand's type (a float
    next to an integer expression becomes float32)."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, (bool, np.bool_)):
        return const(bool(v), "bool")
    if isinstance(v, numbers.Integral):
        return const(int(v), _dtype_name(like.code) if like is not None else "int64")
    if isinstance(v, numbers.Real):
        code = like.code if like is not None and like.code in _FLOATS else 1
        return const(float(v), _dtype_name(code))
    raise TypeError(f"cannot use {type(v).__name__} in a smelt.te expression")


class Var(Expr):
    """An index of a compute (created by te.compute for each dim)."""
    __slots__ = ("name",)

    def __init__(self, name):
        super().__init__("var", (), _INT64)
        self.name = name


_axis_names = itertools.count()


class ReduceAxis(Expr):
    """A reduction axis [0, extent); use it in te.sum(..., axis=k)."""
    __slots__ = ("name", "extent")

    def __init__(self, extent, name):
        super().__init__("raxis", (), _INT64)
        self.name, self.extent = name, extent

    def __repr__(self):
        return f"ReduceAxis({self.name!r}, {self.extent})"


def reduce_axis(dom, name=None):
    """te.reduce_axis(K) or te.reduce_axis((0, K)): an axis over [0, K)."""
    if isinstance(dom, (tuple, list)):
        if len(dom) != 2 or dom[0] != 0:
            raise ArgumentError(f"reduce_axis: a range (0, extent), not {dom!r}")
        dom = dom[1]
    return ReduceAxis(int(dom), name or f"k{next(_axis_names)}")


def const(value, dtype="float32"):
    code = _code(dtype)
    return Expr("const", (value,), code)


def cast(x, dtype):
    return Expr("cast", (_wrap(x),), _code(dtype))


def select(cond, t, f):
    """cond ? t : f, evaluating only the chosen side (a guarded read)."""
    t = _wrap(t, like=f if isinstance(f, Expr) else None)
    f = _wrap(f, like=t)
    return Expr("select", (_wrap(cond), t, f), t.code)


if_then_else = select


def _call(fn, *args):
    first = next((a for a in args if isinstance(a, Expr)), None)
    ws = tuple(_wrap(a, like=first) for a in args)
    return Expr("call", (fn,) + ws, _BOOL if fn in ("isnan", "isinf") else ws[0].code)


def exp(x): return _call("exp", x)
def log(x): return _call("log", x)
def sqrt(x): return _call("sqrt", x)
def tanh(x): return _call("tanh", x)
def erf(x): return _call("erf", x)
def sigmoid(x): return _call("sigmoid", x)
def abs(x): return _call("abs", x)  # noqa: A001
def floor(x): return _call("floor", x)
def ceil(x): return _call("ceil", x)
def round(x): return _call("round", x)  # noqa: A001
def sin(x): return _call("sin", x)
def cos(x): return _call("cos", x)
def pow(x, y): return _call("pow", x, y)  # noqa: A001
def fmod(x, y): return _call("fmod", x, y)
def isnan(x): return _call("isnan", x)
def isinf(x): return _call("isinf", x)
def equal(a, b): return _wrap(a, like=b if isinstance(b, Expr) else None)._bin("eq", b)
def not_equal(a, b): return _wrap(a, like=b if isinstance(b, Expr) else None)._bin("ne", b)


def all(*conds):  # noqa: A001
    out = _wrap(conds[0])
    for c in conds[1:]:
        out = out & c
    return out


def any(*conds):  # noqa: A001
    out = _wrap(conds[0])
    for c in conds[1:]:
        out = out | c
    return out


def _reduction(op, expr, axis):
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not axes or not builtins_all(isinstance(a, ReduceAxis) for a in axes):
        raise ArgumentError(f"te.{op}: axis= takes te.reduce_axis objects")
    e = _wrap(expr)
    return Expr("reduce", (op, e, axes), e.code)


def builtins_all(it):
    for x in it:
        if not x:
            return False
    return True


def sum(expr, axis):  # noqa: A001
    """Sum of expr over the reduce axes (the whole body of a compute)."""
    return _reduction("sum", expr, axis)


def prod(expr, axis):
    return _reduction("prod", expr, axis)


def max(a, b=None, axis=None):  # noqa: A001
    """te.max(expr, axis=k): a reduction; te.max(a, b): the larger value."""
    if axis is not None:
        return _reduction("max", a, axis)
    return _wrap(a, like=b if isinstance(b, Expr) else None)._bin("max", b)


def min(a, b=None, axis=None):  # noqa: A001
    if axis is not None:
        return _reduction("min", a, axis)
    return _wrap(a, like=b if isinstance(b, Expr) else None)._bin("min", b)


# ---- tensors -------------------------------------------------------------------

class IterVar:
    """A loop of a stage in a schedule: i0, i1, ... for the data axes, the
    reduce axes by name; split and fuse results are named as the schedule's
    text form names them (i0.o, i0.i, i0.i1)."""
    __slots__ = ("name", "extent")

    def __init__(self, name, extent):
        self.name, self.extent = name, extent

    def __repr__(self):
        return f"IterVar({self.name!r}, extent={self.extent})"


class _Op:
    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def axis(self):
        return [IterVar(f"i{d}", n) for d, n in enumerate(self.tensor.shape)]

    @property
    def reduce_axis(self):
        b = self.tensor.body
        if b is None or b.kind != "reduce":
            return []
        return [IterVar(a.name, a.extent) for a in b.args[2]]

    @property
    def name(self):
        return self.tensor.name


class Tensor:
    """A placeholder or a compute; T[i, j] reads it in another compute."""

    def __init__(self, name, shape, code, body=None, index_vars=None):
        self.name, self.shape, self.code = name, tuple(int(d) for d in shape), code
        self.body, self.index_vars = body, index_vars
        self.op = _Op(self)

    @property
    def dtype(self):
        return _dtype_name(self.code)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def axis(self):
        return self.op.axis

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        return Expr("read", (self,) + tuple(_wrap(i) for i in idx), self.code)

    def __repr__(self):
        kind = "placeholder" if self.body is None else "compute"
        return f"Tensor({kind} {self.name!r}, shape={self.shape}, dtype={self.dtype})"


_names = itertools.count()


def placeholder(shape, name=None, dtype="float32"):
    """An input tensor of the given shape and dtype."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return Tensor(name or f"placeholder{next(_names)}", shape, _code(dtype))


def compute(shape, fcompute, name=None, dtype=None):
    """A tensor whose element at (i, j, ...) is fcompute(i, j, ...)."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    code = fcompute.__code__ if hasattr(fcompute, "__code__") else None
    names = list(code.co_varnames[:code.co_argcount]) if code else []
    varargs = bool(code and code.co_flags & 0x04)  # lambda *i: ...
    if code and not varargs and code.co_argcount != len(shape):
        raise ArgumentError(f"compute '{name}': fcompute takes {code.co_argcount} indices but "
                            f"the shape has {len(shape)} dims")
    ivars = [Var(names[d] if d < len(names) else f"i{d}") for d in range(len(shape))]
    body = _wrap(fcompute(*ivars))
    c = _code(dtype)
    if c is None:
        c = body.code
    return Tensor(name or f"compute{next(_names)}", shape, c, body, ivars)


# ---- building the C graph ------------------------------------------------------

class _Ctx:
    """A smelt_ctx shared by a schedule and the functions built from it."""

    def __init__(self):
        self.handle = lib().smelt_ctx_new()
        if not self.handle:
            raise MemoryError("smelt_ctx_new failed")

    def __del__(self):
        if getattr(self, "handle", None):
            lib().smelt_ctx_free(self.handle)
            self.handle = None

    def raise_error(self):
        L = lib()
        err = error_for_status(L.smelt_ctx_status(self.handle),
                               text(L.smelt_ctx_message(self.handle)),
                               text(L.smelt_ctx_node(self.handle)), text(L.smelt_ctx_op(self.handle)))
        L.smelt_ctx_clear(self.handle)
        raise err

    def check(self, status):
        if status != 0:
            self.raise_error()

    def need(self, ptr):
        if not ptr:
            self.raise_error()
        return ptr


def _reads(e, out, seen):
    if id(e) in seen:
        return
    seen.add(id(e))
    if e.kind == "read":
        out.append(e.args[0])
    for a in e.args:
        if isinstance(a, Expr):
            _reads(a, out, seen)
        elif isinstance(a, tuple) and e.kind == "reduce":
            pass


def _topo(outputs):
    order, state = [], {}

    def visit(t):
        s = state.get(id(t))
        if s == 2:
            return
        if s == 1:
            raise ArgumentError(f"tensor '{t.name}' depends on itself")
        state[id(t)] = 1
        if t.body is not None:
            deps = []
            _reads(t.body, deps, set())
            for d in deps:
                visit(d)
        state[id(t)] = 2
        order.append(t)

    for t in outputs:
        visit(t)
    return order


class _Builder:
    def __init__(self, ctx, graph):
        self.ctx, self.g, self.L = ctx, graph, lib()
        self.handles = {}  # id(Tensor) -> smelt_te_tensor*

    def tensor(self, t):
        L, shape = self.L, (ctypes.c_int64 * _builtins.max(1, len(t.shape)))(*t.shape)
        if t.body is None:
            h = L.smelt_te_placeholder(self.g, t.name.encode(), t.code, len(t.shape), shape)
        else:
            idx = (_P * _builtins.max(1, len(t.shape)))()
            self.ctx.check(L.smelt_te_compute_begin(self.g, len(t.shape), idx))
            env = {id(v): idx[d] for d, v in enumerate(t.index_vars)}
            body = self.expr(t.body, env, {})
            h = L.smelt_te_compute_end(self.g, t.name.encode(), t.code, len(t.shape), shape, body)
        self.handles[id(t)] = self.ctx.need(h)

    def expr(self, e, env, memo):
        key = id(e)
        if key in memo:
            return memo[key]
        L, g, k, a = self.L, self.g, e.kind, e.args
        if k == "var" or k == "raxis":
            h = env.get(key)
            if h is None:
                what = "index" if k == "var" else "reduce axis"
                raise ArgumentError(f"{what} '{e.name}' is used outside the compute or "
                                    "reduction it belongs to")
        elif k == "const":
            v = a[0]
            if e.code in _FLOATS:
                h = L.smelt_te_const_float(g, e.code, float(v))
            else:
                h = L.smelt_te_const_int(g, e.code, int(v))
        elif k == "read":
            t = a[0]
            if id(t) not in self.handles:
                raise ArgumentError(f"tensor '{t.name}' is read but not part of the schedule")
            idx = (_P * _builtins.max(1, len(a) - 1))(*[self.expr(i, env, memo) for i in a[1:]])
            h = L.smelt_te_read(g, self.handles[id(t)], len(a) - 1, idx)
        elif k == "bin":
            h = L.smelt_te_binary(g, _BIN[a[0]], self.expr(a[1], env, memo),
                                  self.expr(a[2], env, memo))
        elif k == "neg":
            h = L.smelt_te_neg(g, self.expr(a[0], env, memo))
        elif k == "not":
            h = L.smelt_te_not(g, self.expr(a[0], env, memo))
        elif k == "select":
            h = L.smelt_te_select(g, *(self.expr(x, env, memo) for x in a))
        elif k == "cast":
            h = L.smelt_te_cast(g, e.code, self.expr(a[0], env, memo))
        elif k == "call":
            args = (_P * 2)(*[self.expr(x, env, memo) for x in a[1:]])
            h = L.smelt_te_call(g, a[0].encode(), len(a) - 1, args)
        elif k == "reduce":
            op, src, axes = a
            inner = dict(env)
            handles = []
            for ax in axes:
                ah = self.ctx.need(L.smelt_te_reduce_axis(g, ax.name.encode(), ax.extent))
                handles.append(ah)
                inner[id(ax)] = self.ctx.need(L.smelt_te_axis_expr(g, ah))
            arr = (_P * len(handles))(*handles)
            h = L.smelt_te_reduce(g, _REDUCE[op], self.expr(src, inner, {}), len(handles), arr)
        else:
            raise ArgumentError(f"unknown expression kind {k}")
        memo[key] = self.ctx.need(h)
        return memo[key]


# ---- schedules -----------------------------------------------------------------

def _names_of(ivs, what):
    out = []
    for iv in ivs:
        if isinstance(iv, IterVar):
            out.append(iv.name)
        elif isinstance(iv, str):
            out.append(iv)
        else:
            raise ArgumentError(f"{what}: expected an IterVar (C.op.axis[0], a split's result), "
                                f"got {type(iv).__name__}")
    return out


class Stage:
    """s[T]: the schedule steps of one stage (TVM's names and results)."""

    def __init__(self, sched, name, extents=None):
        self.s, self.name = sched, name

    def _do(self, fn, *args):
        self.s._ctx.check(fn(self.s._handle, self.name.encode(), *args))

    def split(self, parent, factor=None, nparts=None):
        """(outer, inner) with inner of extent factor (or outer of nparts)."""
        (p,) = _names_of([parent], "split")
        ext = parent.extent if isinstance(parent, IterVar) else None
        if (factor is None) == (nparts is None):
            raise ArgumentError("split: give factor= or nparts=")
        if factor is None:
            if ext is None:
                raise ArgumentError("split(nparts=) needs an IterVar with a known extent")
            factor = -(-ext // nparts)
        self._do(lib().smelt_te_split, p.encode(), int(factor))
        outer = -(-ext // factor) if ext else None
        return IterVar(p + ".o", outer), IterVar(p + ".i", factor)

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """(xo, yo, xi, yi): split both, outer loops first."""
        xo, xi = self.split(x_parent, x_factor)
        yo, yi = self.split(y_parent, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *ivs):
        names = _names_of(ivs, "fuse")
        if len(names) < 2:
            raise ArgumentError("fuse: two or more adjacent loops")
        cur, ext = names[0], ivs[0].extent if isinstance(ivs[0], IterVar) else None
        for iv, n in zip(ivs[1:], names[1:]):
            self._do(lib().smelt_te_fuse, cur.encode(), n.encode())
            e = iv.extent if isinstance(iv, IterVar) else None
            ext = ext * e if ext and e else None
            cur = f"{cur}.{n}"
        return IterVar(cur, ext)

    def reorder(self, *ivs):
        names = _names_of(ivs, "reorder")
        arr = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
        self._do(lib().smelt_te_reorder, len(names), arr)

    def vectorize(self, iv):
        self._do(lib().smelt_te_vectorize, _names_of([iv], "vectorize")[0].encode())

    def unroll(self, iv):
        self._do(lib().smelt_te_unroll, _names_of([iv], "unroll")[0].encode())

    def parallel(self, iv):
        self._do(lib().smelt_te_parallel, _names_of([iv], "parallel")[0].encode())

    def compute_inline(self):
        self._do(lib().smelt_te_compute_inline)

    def compute_at(self, parent, iv):
        """Compute this stage inside loop iv of stage parent (s[C] or C)."""
        pname = parent.name
        self._do(lib().smelt_te_compute_at, pname.encode(), _names_of([iv], "compute_at")[0].encode())

    def tensorize(self, iv, kernel="smelt.gemm_f32"):
        """Replace the loops from iv inward by a micro-kernel call."""
        self._do(lib().smelt_te_tensorize, _names_of([iv], "tensorize")[0].encode(), kernel.encode())

    @property
    def loops(self):
        """The stage's loops, outermost first, as IterVars (extents unknown)."""
        raw = self.s._ctx.need(lib().smelt_te_stage_loops(self.s._handle, self.name.encode()))
        return [IterVar(n, None) for n in text(raw).split()]


class _StageOp(_Op):
    def __init__(self, tensor, axes, reduce_axes):
        super().__init__(tensor)
        self._axes, self._reduce = axes, reduce_axes

    @property
    def axis(self):
        return list(self._axes)

    @property
    def reduce_axis(self):
        return list(self._reduce)


class _StageTensor(Tensor):
    """A stage a schedule made (C.local, C.rf): use as s[X], X.op.axis."""

    def __init__(self, name, shape, code, axes, reduce_axes):
        super().__init__(name, shape, code)
        self.op = _StageOp(self, axes, reduce_axes)


class Schedule:
    """What smelt.create_schedule returns; s[T] is T's Stage."""

    def __init__(self, outputs):
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        for o in outs:
            if not isinstance(o, Tensor) or o.body is None:
                raise ArgumentError("create_schedule: outputs are te.compute tensors")
        self.outputs = outs
        self.tensors = _topo(outs)
        self._ctx = _Ctx()
        L = lib()
        self._graph = self._ctx.need(L.smelt_te_graph_new(self._ctx.handle))
        self._handle = None
        b = _Builder(self._ctx, self._graph)
        for t in self.tensors:
            b.tensor(t)
        self._tensor_handles = b.handles
        arr = (_P * len(outs))(*[b.handles[id(o)] for o in outs])
        self._handle = self._ctx.need(L.smelt_te_schedule_new(self._graph, len(outs), arr))

    def __del__(self):
        L = lib()
        if getattr(self, "_handle", None):
            L.smelt_te_schedule_free(self._handle)
            self._handle = None
        if getattr(self, "_graph", None):
            L.smelt_te_graph_free(self._graph)
            self._graph = None

    def __getitem__(self, t):
        name = t.name if isinstance(t, (Tensor, Stage)) else str(t)
        return Stage(self, name)

    def cache_write(self, tensor, scope="local"):
        """A stage T.local computing T's values; T copies them out."""
        if scope != "local":
            raise ArgumentError(f"cache_write: scope '{scope}' (only 'local')")
        self[tensor]._do(lib().smelt_te_cache_write)
        return _StageTensor(tensor.name + ".local", tensor.shape, tensor.code, tensor.op.axis,
                            tensor.op.reduce_axis)

    def rfactor(self, tensor, axis, factor):
        """Split reduce axis by factor and keep the factor partial results in
        a stage T.rf whose last data axis is axis.i (see sched.h)."""
        (n,) = _names_of([axis], "rfactor")
        self[tensor]._do(lib().smelt_te_rfactor, n.encode(), int(factor))
        before = text(lib().smelt_te_schedule_text(self._handle)).count("rfactor " + tensor.name + " ")
        name = tensor.name + ".rf" + ("" if before <= 1 else str(before))
        shape = tuple(tensor.shape) + (int(factor),)
        axes = tensor.op.axis + [IterVar(n + ".i", int(factor))]
        red = [IterVar(n + ".o", None) if r.name == n else r for r in tensor.op.reduce_axis]
        return _StageTensor(name, shape, tensor.code, axes, red)

    def apply(self, text_steps):
        """Steps in the text form (sched.h), one a line."""
        self._ctx.check(lib().smelt_te_apply_text(self._handle, text_steps.encode()))

    @property
    def text(self):
        """The steps so far in the text form (what smelt compile --schedule reads)."""
        return text(lib().smelt_te_schedule_text(self._handle))

    def _args(self, args):
        hs = []
        for a in args:
            h = self._tensor_handles.get(id(a)) if isinstance(a, Tensor) else None
            if h is None:
                raise ArgumentError(f"argument {a!r} is not a tensor of this schedule")
            hs.append(h)
        return (_P * _builtins.max(1, len(hs)))(*hs), len(hs)


def create_schedule(outputs):
    """A schedule of the computes the outputs (a tensor or a list) need."""
    return Schedule(outputs)


def lower(s, args):
    """The loop IR of s with args (placeholders and outputs) as parameters."""
    arr, n = s._args(args)
    return text(s._ctx.need(lib().smelt_te_lower(s._handle, n, arr)))


class Function:
    """A built function: f(a, b, c) on NumPy arrays, in the args order."""

    def __init__(self, s, args, target, threads):
        arr, n = s._args(args)
        self._ctx = s._ctx
        self._handle = None
        self.args = [(a.name, numpy_dtype(a.code), a.shape, a.body is not None) for a in args]
        tgt = target.encode() if target else None
        self._lock = threading.Lock()  # one call at a time (the runtime model is not reentrant)
        self._handle = self._ctx.need(lib().smelt_te_build(s._handle, n, arr, tgt, int(threads)))

    def __del__(self):
        if getattr(self, "_handle", None):
            lib().smelt_te_func_free(self._handle)
            self._handle = None

    @property
    def source(self):
        """The generated C."""
        return text(lib().smelt_te_func_source(self._handle))

    def __call__(self, *arrays):
        if len(arrays) != len(self.args):
            raise ArgumentError(f"the function takes {len(self.args)} arrays "
                                f"({', '.join(a[0] for a in self.args)}), not {len(arrays)}")
        ptrs = (_P * len(arrays))()
        sizes = (ctypes.c_size_t * len(arrays))()
        for i, (x, (name, dt, shape, is_out)) in enumerate(zip(arrays, self.args)):
            if not isinstance(x, np.ndarray):
                raise ArgumentError(f"'{name}': a NumPy array, not {type(x).__name__}")
            if x.dtype != dt or x.shape != shape:
                raise ArgumentError(f"'{name}': expected {dt}{list(shape)}, got "
                                    f"{x.dtype}{list(x.shape)}")
            if not x.flags.c_contiguous:
                raise ArgumentError(f"'{name}': the array must be C-contiguous")
            if is_out and not x.flags.writeable:
                raise ArgumentError(f"'{name}': the output array is read-only")
            ptrs[i] = x.ctypes.data
            sizes[i] = x.nbytes
        with self._lock:
            self._ctx.check(lib().smelt_te_func_call(self._handle, len(arrays), ptrs, sizes))


def build(s, args, target="host", threads=0):
    """Generate C for s, build it through the compile cache and load it."""
    return Function(s, args, target, threads)


# ---- custom ops ------------------------------------------------------------------

_OP_FN = ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_P), ctypes.c_int,
                          ctypes.POINTER(_P), _P)
_registered = {}  # (domain, op_type) -> the ctypes callback (kept alive)


def register_op(domain, op_type, fcompute, num_inputs, num_outputs=1):
    """Give ONNX nodes of op_type in domain (not ai.onnx) a definition:
    fcompute(*inputs) receives one te.Tensor per node input (its static
    shape and dtype) and returns the output te.compute tensor (a tuple for
    several).  Models loaded afterwards compile such nodes like built-in ops
    (their reference result comes from the same definition).

        te.register_op("my.ops", "Softplus2", lambda x: te.compute(
            x.shape, lambda *i: te.log(1 + te.exp(x[i])) * 2, name="y"), num_inputs=1)
    """
    def trampoline(g, n_in, ins, n_out, outs, user):
        try:
            L = lib()
            proxies, handles = [], {}
            for i in range(n_in):
                h = ins[i]
                shape = tuple(L.smelt_te_tensor_dim(h, d) for d in range(L.smelt_te_tensor_rank(h)))
                t = Tensor(f"x{i}", shape, L.smelt_te_tensor_dtype(h))
                proxies.append(t)
                handles[id(t)] = h
            res = fcompute(*proxies)
            res = list(res) if isinstance(res, (tuple, list)) else [res]
            if len(res) != n_out:
                raise ArgumentError(f"the definition of {domain}.{op_type} returned {len(res)} "
                                    f"tensors for {n_out} outputs")
            for r in res:
                if not isinstance(r, Tensor) or r.body is None:
                    raise ArgumentError(f"the definition of {domain}.{op_type} must return "
                                        "te.compute tensors")
            ctx = _BorrowedCtx(g)
            b = _Builder(ctx, g)
            b.handles.update(handles)
            for t in _topo(res):
                if id(t) not in b.handles:
                    if t.body is None:
                        raise ArgumentError(f"placeholder '{t.name}' in the definition of "
                                            f"{domain}.{op_type}: only its inputs may be read")
                    b.tensor(t)
            for i, r in enumerate(res):
                outs[i] = b.handles[id(r)]
            return 0
        except _Recorded as e:
            return e.status
        except Exception as e:  # noqa: BLE001 - reported through the C error context
            msg = f"{type(e).__name__}: {e}"
            return lib().smelt_te_error(g, getattr(e, "status", None) or 9, msg.encode())

    cb = _OP_FN(trampoline)
    _Ctx_once = _Ctx()
    _Ctx_once.check(lib().smelt_te_register_op(_Ctx_once.handle, domain.encode(), op_type.encode(),
                                               int(num_inputs), int(num_outputs),
                                               ctypes.cast(cb, _P), None))
    _registered[(domain, op_type)] = cb


class _Recorded(Exception):
    """An error already recorded in the C context."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


class _BorrowedCtx:
    """The error side of _Ctx for a graph handle whose ctx is the compiler's:
    a failed call has recorded its error there already."""

    def __init__(self, graph):
        self.graph = graph

    def check(self, status):
        if status != 0:
            raise _Recorded(status)

    def need(self, ptr):
        if not ptr:
            raise _Recorded(9)
        return ptr
