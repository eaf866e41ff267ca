"""smelt: a deep-learning compiler for ONNX models, from Python.

    import smelt
    m = smelt.load("model.onnx")
    c = m.compile(threads=2)
    outs = c.run({"input": x})

The package is a ctypes binding of libsmelt.so (shipped inside it, or named
by SMELT_LIB); see docs/python.md.
"""
from .check import CheckResult, check
from .errors import (ArgumentError, Error, ExecutionError, FileError, InternalError,
                     InvalidModelError, LimitError, ModelAttributeError, OutOfMemoryError,
                     ParseError, ShapeError, UnsupportedError)
from .model import Benchmark, Compiled, Graph, Model, Node, ValueInfo, load
from .tune import tune
from . import te
from .te import build, create_schedule, lower

__version__ = "0.1.0"

__all__ = [
    "load", "check", "tune", "te", "create_schedule", "lower", "build", "Model", "Compiled", "Graph", "Node", "ValueInfo", "Benchmark",
    "CheckResult", "Error", "FileError", "ParseError", "InvalidModelError", "UnsupportedError",
    "ShapeError", "ModelAttributeError", "LimitError", "OutOfMemoryError", "ArgumentError",
    "ExecutionError", "InternalError",
]
