"""What went wrong in a batch: out of memory (every form), an interrupt, or a bug in ``fn``."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import sys
import threading
import types

import jax

from batchlab.runs.results import RunInterrupted

OOM_XLA = "out of memory (XLA RESOURCE_EXHAUSTED)"
OOM_XLA_INTERNAL = "out of memory (XLA INTERNAL: out of memory)"
OOM_HOST = "out of memory (host MemoryError)"
OOM_BUDGET = "over budget (planned bytes > budget_bytes)"

# the texts of XLA's out-of-memory errors (an INTERNAL error is memory only when it says so)
_OOM = re.compile(
    r"\bRESOURCE_EXHAUSTED\b|\bOut of memory\b|\bYNNPACK operation failed\b|\bfailed to allocate\b",
    re.IGNORECASE,
)
# a callback's Python error comes inside an INTERNAL error whose text is its traceback, which
# may quote anything: there only a raised MemoryError is memory
_CALLBACK = re.compile(r"CpuCallback error|pure_callback failed|io_callback failed")
_DECORATION = re.compile(r"^[\W_]*$")  # a line of dashes, stars, equals: no words
_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Interrupt|Exit|Warning)\b\s*:")


class OutOfMemory(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.halves = kind, []


class FnBug(Exception):
    pass


def is_out_of_memory(error: BaseException) -> bool:
    """True for every out-of-memory form XLA raises (``RESOURCE_EXHAUSTED``, XLA:CPU's
    ``INTERNAL: ... Out of memory``/``YNNPACK operation failed``) and a host ``MemoryError``.

    Example:
      >>> import jax
      >>> is_out_of_memory(jax.errors.JaxRuntimeError("INTERNAL: Error dispatching computation: "
      ...     "Out of memory allocating 4294967296 bytes."))
      True
      >>> is_out_of_memory(ValueError("shape"))
      False
    """
    if isinstance(error, MemoryError):
        return True
    if not isinstance(error, jax.errors.JaxRuntimeError):
        return False
    text = str(error)
    if _CALLBACK.search(text):
        return bool(re.search(r"^\s*MemoryError\b", text, re.M))
    return bool(_OOM.search(text))


def oom_kind(error: BaseException) -> str:
    """The outcome logged for an out-of-memory error: which form it came in."""
    if not isinstance(error, jax.errors.JaxRuntimeError):
        return OOM_HOST
    return OOM_XLA if "RESOURCE_EXHAUSTED" in str(error) else OOM_XLA_INTERNAL


def is_interrupt(error: BaseException) -> bool:
    """True for ``KeyboardInterrupt``, also one raised in a host callback (a JaxRuntimeError)."""
    if isinstance(error, jax.errors.JaxRuntimeError):
        return bool(re.search(r"^KeyboardInterrupt\b", str(error), re.M))
    return isinstance(error, KeyboardInterrupt)


def short_message(error: BaseException) -> str:
    """The error's last ``Name: text`` line (and its continuation lines), without decoration."""
    lines = [ln.strip() for ln in str(error).strip().splitlines()]
    words = [ln for ln in lines if ln and not _DECORATION.match(ln)]
    starts = [i for i, ln in enumerate(lines) if _ERROR_LINE.match(ln)]
    if not words:
        return type(error).__name__
    if not starts:
        text = f"{type(error).__name__}: {' '.join(words)}"
    else:
        end = starts[-1] + 1
        while end < len(lines) and lines[end] and not _DECORATION.match(lines[end]):
            end += 1
        text = " ".join(lines[starts[-1] : end])
    return text if len(text) <= 1000 else text[:997] + "..."


@contextlib.contextmanager
def interrupt_flag():
    """SIGINT sets ``flag.set`` (stop after this batch); a second Ctrl-C interrupts at once."""
    flag = types.SimpleNamespace(set=False)

    def handle(signum, frame):
        if flag.set:
            raise KeyboardInterrupt
        flag.set = True

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, handle) if main else None
    try:
        yield flag
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def exit_as_interrupted() -> None:
    """A script that RunInterrupted ends exits by SIGINT (status 130), as Ctrl-C ends Python."""
    if sys.excepthook is not sys.__excepthook__ or os.name != "posix":
        return

    def hook(kind, value, tb):
        sys.__excepthook__(kind, value, tb)
        if not isinstance(value, RunInterrupted):
            return
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        os._exit(130)  # only if the signal did not end the process

    sys.excepthook = hook
