"""smelt.tune: the auto-tuner, as `smelt tune` runs it."""
import ctypes
import os
import sys

from ._ctx import Context
from ._lib import TuneOptions, lib
from .errors import ArgumentError


def _models(models):
    paths = [models] if isinstance(models, (str, os.PathLike)) else list(models)
    if not paths:
        raise ArgumentError("no model to tune")
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise ArgumentError(f"models are file paths, not {type(p).__name__}")
    return [os.fsencode(p) for p in paths]


def tune(models, records, trials=64, minutes=None, target="host", threads=0, opt_level=2,
         progress=True):
    """Search schedules for the models' functions on this machine.

    Every measurement is appended to `records` (JSON lines; a file that
    exists is read first, so a run resumes); compile(records=...) applies the
    best.  trials: per task; minutes: whole-run budget (None: none);
    progress: the tuner's progress lines on stdout.
    """
    if not isinstance(trials, int) or trials < 1:
        raise ArgumentError(f"trials must be an int >= 1, not {trials!r}")
    if minutes is not None and not minutes > 0:
        raise ArgumentError(f"minutes must be > 0 or None, not {minutes!r}")
    if not isinstance(threads, int) or threads < 0:
        raise ArgumentError(f"threads must be an int >= 0, not {threads!r}")
    paths = _models(models)
    o = TuneOptions()
    lib().smelt_tune_options_init(ctypes.byref(o))
    keep = [os.fsencode(records), target.encode()]  # borrowed by o
    o.records, o.target = keep
    o.trials, o.minutes, o.threads = trials, float(minutes or 0), threads
    o.quiet, o.opt_level = int(not progress), opt_level
    argv = (ctypes.c_char_p * len(paths))(*paths)
    sys.stdout.flush()  # keep Python's and the tuner's lines in order
    with Context() as ctx:
        ctx.check(lib().smelt_tune(ctx.handle, argv, len(paths), ctypes.byref(o)))
    return records
