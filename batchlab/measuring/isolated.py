"""``measure(..., isolated=True)``: one measurement in a fresh Python process."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import cloudpickle
import jax
import numpy as np

from batchlab._util.child import TIMEOUT, run_child
from batchlab._util.compile import is_jitted
from batchlab.measuring.live import DeviceMemory, LiveMemory
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.memory import MemoryEstimate

_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "MemoryError": MemoryError}
_NESTED = {"memory": MemoryEstimate, "live": LiveMemory}
_NESTED |= {"device_before": DeviceMemory, "device_after": DeviceMemory}


def _build(cls, data: Any):
    """Rebuilds dataclass ``cls`` from JSON data, accepting only its own fields and plain values."""
    if not isinstance(data, dict):
        raise ValueError(f"isolated result: expected an object for {cls.__name__}")
    kwargs = {}
    for name in [f.name for f in dataclasses.fields(cls) if f.name in data]:
        value = data[name]
        if isinstance(value, list):
            if not all(isinstance(v, (int, float, str)) for v in value):
                raise ValueError(f"isolated result: {cls.__name__}.{name} holds non-numbers")
            value = tuple(value)
        elif isinstance(value, dict):
            value = _build(_NESTED[name], value)
        elif value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"isolated result: {cls.__name__}.{name} is not a plain value")
        kwargs[name] = value
    return cls(**kwargs)


def portable(fn: Any) -> tuple[Any, dict[str, Any] | None]:
    """``(function, jit options)`` to send: a jitted ``fn`` as its Python function and options
    (``None`` options: ``fn`` is not jitted)."""
    if not is_jitted(fn):
        return fn, None
    plain, info = getattr(fn, "__wrapped__", None), getattr(fn, "_jit_info", None)
    if plain is None or info is None:
        raise TypeError(
            f"`fn` is a jax.jit-wrapped {type(fn).__name__} whose Python function this JAX does "
            "not expose, so it cannot be sent to a fresh process. Pass the function before "
            "jax.jit (close over its static arguments) with isolated=True."
        )
    unspecified = [type(leaf).__name__ == "UnspecifiedValue" for leaf in info.out_shardings_leaves]
    if info.user_specified_in_shardings or not all(unspecified) or info.device or info.backend:
        raise TypeError(
            "`fn` is jax.jit-wrapped with in_shardings/out_shardings, a device or a backend; "
            "isolated=True re-wraps its function in a fresh process and does not carry those. "
            "Measure it with isolated=False, or pass the function before jax.jit."
        )
    names = ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames")
    options = {k: getattr(info, k) for k in (*names, "keep_unused", "inline")}
    if info.compiler_options_kvs:
        options["compiler_options"] = dict(info.compiler_options_kvs)
    return plain, options


def _picklable(part: Any) -> bool:
    try:
        cloudpickle.dumps(part)
    except Exception:  # pickling raises TypeError, PicklingError, AttributeError, ...
        return False
    return True


def measure_in_subprocess(fn, args: tuple, kwargs: dict, options: dict[str, Any]) -> Measurement:
    """Runs :func:`batchlab.measure` in a child process and returns its result."""
    plain, jit_options = portable(fn)
    # host copies: a device buffer cannot cross processes
    host = jax.tree_util.tree_map(
        lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, (args, kwargs)
    )
    payload = (plain, jit_options, host, options)
    try:
        data = cloudpickle.dumps(payload)
    except Exception as e:
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        parts = [("`fn`", plain), *((f"`args[{i}]`", a) for i, a in enumerate(host[0]))]
        parts += [(f"`kwargs[{k!r}]`", v) for k, v in host[1].items()]
        where = next((name for name, part in parts if not _picklable(part)), "`fn`")
        raise TypeError(
            f"{where} cannot be sent to the fresh process of isolated=True: cloudpickle cannot "
            f"pickle it ({reason}). The function, everything it refers to (globals, closed-over "
            "objects) and its arguments must be picklable; move the object that is not (a lock, "
            "an open file, a generator, a client) out of the function or its arguments, or "
            "measure with isolated=False. Nothing has run."
        ) from None
    child = run_child("batchlab.measuring.timing:measure_here", data)
    if child.stderr:
        sys.stderr.write(child.stderr)
    reply = child.reply
    if reply is None:
        raise RuntimeError(
            f"The isolated measurement's subprocess ended (exit status {child.returncode}) "
            "without a result; its stderr is shown above."
            if child.returncode is not None
            else f"The isolated measurement's subprocess ran out of time ({TIMEOUT:.0f} s)."
        )
    if "error" in reply:
        error = reply["error"]
        if error.get("loading"):
            raise TypeError(
                f"in the isolated subprocess: `fn` or its arguments could not be rebuilt in the "
                f"fresh process ({error.get('type')}: {error.get('message')}); define fn in an "
                "importable module or in the notebook itself, or measure with isolated=False."
            )
        cls = _ERRORS.get(error.get("type"), RuntimeError)
        raise cls(f"in the isolated subprocess: {error.get('type')}: {error.get('message')}")
    return _build(Measurement, reply)
