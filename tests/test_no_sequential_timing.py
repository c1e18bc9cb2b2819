"""No timed comparison outside the one sampler: a walk over the package (and the benchmarks).

A *sequential timing comparison* times two or more candidates one after
another, so a load burst lands on one of them only. Every comparison goes
through :func:`batchlab.measuring.interleaved`; a timing anywhere else may
time ONE thing (a compile, a run's own batches, a profiler capture, one
function's samples).

The walk reads every function on its own (nested functions apart) and finds
its *timed things*: each span ``t0 = time.perf_counter()`` ... ``time.perf_counter()
- t0`` (what the statements in between call), and each call of a timing
helper (``measure``, ``sample``, ``autorange``) by the
function it times, and each call of a function of the same file that times its own body and
returns the seconds (``old_rewrite(...)``, ``journal(...)``). A function is a sequential
comparison when

* it times two different things, or
* it times, inside a ``for`` loop, a thing named by the loop's variable
  (``for name, fn in candidates.items(): t0 = ...; fn()``).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import NamedTuple

import batchlab

PACKAGE = Path(batchlab.__file__).resolve().parent
ROOT = PACKAGE.parent
#: the one sampler: it is where candidates are timed, round-robin
SAMPLER = "batchlab/measuring/sampler.py"
#: timing helpers: these, and every function of the walked files that times a callable it is given
TIMERS = {"measure": 0, "sample": 0, "autorange": 0}  # name: timed arg
#: timers of any callable: what they time is their argument; a helper found in the walked files
#: times its own code applied to it (``old_rewrite(outputs)`` and ``journal(outputs)`` differ)
GENERIC = frozenset(TIMERS)
#: the "timed argument" of a routine that times its own body (``old_rewrite`` timing its writes)
ROUTINE = -1
#: calls inside a span that are not what it times
NEUTRAL = {
    "time.perf_counter",
    "perf_counter",
    "_time.perf_counter",
    "jax.block_until_ready",
    "block_until_ready",
    "range",
    "len",
    "min",
    "max",
    "sum",
    "float",
    "int",
    "list",
    "tuple",
    "dict",
    "zip",
    "enumerate",
    "print",
    "sorted",
    "isinstance",
    "getattr",
}
#: (file, function): why its timings are of ONE thing though the walk sees two
ONE_THING = {
    ("batchlab/batching/comparison.py", "compare"): (
        "each strategy's compile and first call (one thing each); its run times are interleaved"
    ),
    ("batchlab/measuring/plan.py", "compile_fn"): "the two phases of one compile (lower, compile)",
    ("batchlab/runs/calibration.py", "run_here"): (
        "each job's peak memory in a fresh process (VmHWM, memory not time), one after the other"
    ),
    ("benchmarks/explorer_revisit.py", "budget_explorer"): (
        "an explorer's first visit and its revisit (a cache hit): a first visit happens once, "
        "so it cannot be repeated round-robin"
    ),
    ("benchmarks/strategies.py", "compile_times"): (
        "each candidate's cold compile: a repeat hits the cache, so compiles are not interleaved"
    ),
    ("benchmarks/timeline.py", "parse_and_draw"): "the two phases of one display (parse, draw)",
    ("benchmarks/prefetch.py", "main"): (
        "sizes the workload (one layer's time, then the step's, the loader's); the comparison "
        "is compare_prefetch's"
    ),
}
#: files another engineer is moving onto the sampler; each entry must still be flagged
PENDING: dict[str, str] = {}


def _callee(call: ast.Call) -> str | None:
    """What one call times: a timer's first argument, else the callee (``None``: neutral)."""
    name = ast.unparse(call.func)
    if (timed := _timer_arg(call)) is not None:
        return timed
    if name in NEUTRAL or name.endswith((".append", ".items", ".values")):
        return None
    return name


def _timer_arg(call: ast.Call) -> str | None:
    """What a call of a timing helper times (its timed argument), else ``None``."""
    name = ast.unparse(call.func).split(".")[-1]
    i = TIMERS.get(name)
    if i == ROUTINE:
        return f"{name}()"
    if i is None or len(call.args) <= i:
        return None
    arg = ast.unparse(call.args[i])
    return arg if name in GENERIC else f"{name}({arg})"


def _walk(nodes: list[ast.AST]):
    """The nodes under ``nodes``, nested functions and classes left out."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _timed(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """(what a span times, the names it branches on) for the statements of one span.

    What it times: the calls inside ``jax.block_until_ready(...)`` and the
    timers' arguments; when there are none, every call that is not neutral.
    """
    waited, timers, every, tests = set(), set(), set(), set()
    for node in _walk(nodes):
        if isinstance(node, (ast.If, ast.IfExp)) and isinstance(node.test, ast.Name):
            tests.add(node.test.id)  # a switch between configurations: `x if ahead else y`
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if (timed := _timer_arg(node)) is not None:
            timers.add(timed)
        elif name.endswith("block_until_ready"):
            waited |= {c for c in map(_callee, _calls_in(node.args)) if c}
        elif (c := _callee(node)) is not None:
            every.add(c)
    return (waited | timers) or every, tests


def _calls_in(nodes: list[ast.AST]) -> list[ast.Call]:
    return [n for n in _walk(nodes) if isinstance(n, ast.Call)]


def _is_clock(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith("perf_counter")


def _clock_starts(stmt: ast.stmt) -> list[str]:
    """Names assigned ``time.perf_counter()`` by ``stmt`` (``t0 = ...`` or ``a, t0 = x, ...``)."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return []
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Name) and _is_clock(value):
        return [target.id]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
        return [
            t.id
            for t, v in zip(target.elts, value.elts, strict=False)
            if isinstance(t, ast.Name) and _is_clock(v)
        ]
    return []


def _reads_clock_minus(stmt: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Sub)
        and isinstance(n.right, ast.Name)
        and n.right.id == name
        for n in ast.walk(stmt)
    )


def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def _varying(loop: ast.For) -> frozenset[str]:
    """The loop's variables and what its body computes from them (``ahead = name.startswith(...)``)."""
    names = set(_names(loop.target))
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign) and _names(stmt.value) & names:
            names |= {n for t in stmt.targets for n in _names(t)}
    return frozenset(names)


def _body_lists(fn: ast.AST):
    """(statements, loop variables around them, if-arms around them) for every list in ``fn``."""
    stack = [(fn.body, (), ())]
    while stack:
        body, loops, arms = stack.pop()
        yield body, loops, arms
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            inner = (*loops, _varying(stmt)) if isinstance(stmt, (ast.For, ast.AsyncFor)) else loops
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(stmt, field, None), list):
                    arm = (*arms, (id(stmt), field)) if isinstance(stmt, ast.If) else arms
                    stack.append((getattr(stmt, field), inner, arm))
            for handler in getattr(stmt, "handlers", []):
                stack.append((handler.body, inner, arms))


def _timer_calls(node: ast.AST, loops: tuple, arms: tuple) -> list:
    """Calls of a timing helper under ``node``; a comprehension's variables count as a loop's."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try)):
        return [
            t
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, ast.stmt)  # their statement lists are walked on their own
            for t in _timer_calls(child, loops, arms)
        ]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        loops = (*loops, frozenset().union(*(_names(g.target) for g in node.generators)))
    found = []
    if isinstance(node, ast.Call) and (what := _timer_arg(node)) is not None:
        found.append(Timed(frozenset({what}), frozenset(), loops, arms, node.lineno))
    for child in ast.iter_child_nodes(node):
        found += _timer_calls(child, loops, arms)
    return found


class Timed(NamedTuple):
    what: frozenset[str]  # what is timed
    tests: frozenset[str]  # names the timed code branches on
    loops: tuple  # the variables of the loops around it
    arms: tuple  # the if-arms around it
    line: int
    span: bool = False  # a clock span (not a timer's call)


def timed_things(fn: ast.AST) -> list[Timed]:
    """Every span and timer call in ``fn`` (its nested functions apart)."""
    found = []
    for body, loops, arms in _body_lists(fn):
        for i, stmt in enumerate(body):
            for name in _clock_starts(stmt):
                for j in range(i + 1, len(body)):
                    if _reads_clock_minus(body[j], name):
                        what, tests = _timed(body[i + 1 : j + 1])
                        if what:
                            found.append(
                                Timed(
                                    frozenset(what),
                                    frozenset(tests),
                                    loops,
                                    arms,
                                    stmt.lineno,
                                    True,
                                )
                            )
                        break
            found += _timer_calls(stmt, loops, arms)
    return found


def _built(fn: ast.AST) -> dict[str, frozenset[str]]:
    """Local name -> the names it is built from (``call = lambda: c.run(*args)``: c, args)."""
    built: dict[str, frozenset[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _names(target):
                    built[name] = built.get(name, frozenset()) | _names(node.value)
        elif isinstance(node, ast.FunctionDef) and node is not fn:
            built[node.name] = frozenset().union(*(_names(b) for b in node.body))
    return built


def _expand(names: set[str], built: dict[str, frozenset[str]]) -> set[str]:
    """``names`` and, transitively, what they were built from."""
    out, todo = set(names), list(names)
    while todo:
        for n in built.get(todo.pop(), ()):
            if n not in out:
                out.add(n)
                todo.append(n)
    return out


def _aliases(fn: ast.AST) -> dict[str, frozenset[str]]:
    """Local one-call wrappers: ``def call(): return fn(*args)`` or ``call = lambda: fn(x)``."""
    out = {}
    for node in ast.iter_child_nodes(fn):
        body = None
        if isinstance(node, ast.FunctionDef) and len(node.body) == 1:
            body, name = node.body[0], node.name
            body = body.value if isinstance(body, ast.Return) else None
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Lambda)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            body, name = node.value.body, node.targets[0].id
        if isinstance(body, ast.Call) and (c := _callee(body)):
            out[name] = frozenset({c})
    return out


def _unalias(what: frozenset[str], aliases: dict[str, frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*(aliases.get(w, {w}) for w in what))


def _exclusive(a: Timed, b: Timed) -> bool:
    """In two arms of one ``if``: never both timed in one call."""
    arms = dict(a.arms)
    return any(node in arms and arms[node] != field for node, field in b.arms)


def sequential_comparisons(source: str) -> list[str]:
    """``function:line: why`` for every function of ``source`` that compares timings in sequence."""
    own = {k: v for k, v in timing_helpers(source).items() if k not in TIMERS}
    own |= {k: ROUTINE for k in timed_routines(source) if k not in TIMERS and k not in own}
    own.pop("interleaved", None)
    TIMERS.update(own)  # this file's own timing helpers (private ones count here only)
    try:
        return _sequential(source)
    finally:
        for k in own:
            TIMERS.pop(k)


def _sequential(source: str) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        things = [t._replace(what=_unalias(t.what, _aliases(fn))) for t in timed_things(fn)]
        built = _built(fn)
        roots = [_expand({n for w in t.what for n in _names(ast.parse(w))}, built) for t in things]
        # one thing under two names (a timer inside a span, `call` built from `fn`): one contains
        # the other once each is expanded to what it was built from
        pairs = [
            (a, b)
            for i, a in enumerate(things)
            for j, b in enumerate(things[i + 1 :], i + 1)
            if not (roots[i] <= roots[j] or roots[j] <= roots[i]) and not _exclusive(a, b)
        ]
        if pairs:
            a, b = pairs[0]
            found.append(
                f"{fn.name}:{a.line}: times {sorted(a.what)} (line {a.line}) and "
                f"{sorted(b.what)} (line {b.line})"
            )
            continue
        for t in things:
            varying = set().union(*t.loops)
            named = {n for w in t.what for n in _names(ast.parse(w))} | t.tests
            if varying & named:
                found.append(f"{fn.name}:{t.line}: times each {sorted(varying & named)} of a loop")
                break
    return found


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


def timing_helpers(source: str) -> dict[str, int]:
    """``{name: index of the timed parameter}``: functions that time a call of a parameter.

    A timed call depends on a parameter directly (``fn()``) or through a local
    name built from it (``call = lambda: c.run(*args)``).
    """
    found = {}
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        built = _built(fn)
        spans = [t for t in timed_things(fn) if t.span]
        timed = {n for t in spans for w in t.what for n in _names(ast.parse(w))}
        timed = _expand(timed, built)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        hits = [i for i, p in enumerate(params) if p in timed and p not in ("self", "cls")]
        if hits:
            found[fn.name] = hits[0]
    return found


def timed_routines(source: str) -> set[str]:
    """Functions that time their own body (a span around what they do) and return the seconds.

    Two of them called by one function are a comparison made in sequence, as two timers are:
    ``old_rewrite(outputs)`` then ``journal(outputs)``, each returning its own writes' time.
    """
    found = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not any(t.span for t in timed_things(fn)):
            continue
        nodes = list(_walk(fn.body))
        clock = {
            target.id
            for node in nodes
            if isinstance(node, ast.Assign) and "perf_counter() -" in ast.unparse(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in nodes:
            if isinstance(node, ast.Return) and node.value is not None:
                text = ast.unparse(node.value)
                if "perf_counter() -" in text or clock & _names(node.value):
                    found.add(fn.name)
    return found


def test_no_sequential_timing_comparison_in_the_package():
    public = {}
    for path in _files():  # a private helper (`_time`) counts in its own file only
        public.update({k: v for k, v in timing_helpers(path.read_text()).items() if k[0] != "_"})
    public.pop("interleaved", None)
    TIMERS.update(public)
    bad, still_pending = [], []
    for path in _files():
        rel = str(path.relative_to(ROOT))
        if rel == SAMPLER:
            continue
        found = sequential_comparisons(path.read_text())
        hits = [h for h in found if (rel, h.split(":")[0]) not in ONE_THING]
        if rel in PENDING:
            still_pending += [rel] if hits else []
            continue
        bad += [f"{rel}:{h}" for h in hits]
    assert not bad, "time these with bl.measuring.interleaved:\n" + "\n".join(bad)
    assert set(still_pending) == set(PENDING), (
        f"{sorted(set(PENDING) - set(still_pending))} no longer compare in sequence: "
        "take them out of PENDING"
    )


PLANTED = """
import time
import jax

def sequential(f, g, x):
    t0 = time.perf_counter()
    jax.block_until_ready(f(x))
    a = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(g(x))
    return a, time.perf_counter() - t0

def in_a_loop(candidates, x):
    times = {}
    for name, fn in candidates.items():
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        times[name] = time.perf_counter() - t0
    return times

def by_name(candidates, x):
    return {k: measure(candidates[k], x).median for k in candidates}

def two_measures(f, g, x):
    return measure(f, x).median / bl.measure(g, x).median

def _time_one(c):
    call = lambda: c.run()
    samples, start = [], time.perf_counter()
    while time.perf_counter() - start < 0.1:
        samples.append(sample(call, 1))
    return samples

def helper_per_candidate(candidates):
    return {c.label: _time_one(c) for c in candidates}

def switches(run, make):
    for name in ("serial", "prefetch"):
        ahead = name.startswith("prefetch")
        t0 = time.perf_counter()
        run(prefetch(make()) if ahead else make())
        print(name, time.perf_counter() - t0)

def _old_way(data):
    t0 = time.perf_counter()
    write_all(data)
    return time.perf_counter() - t0

def _new_way(data):
    t0 = time.perf_counter()
    append(data)
    seconds = time.perf_counter() - t0
    return seconds

def two_routines(data):
    return _old_way(data) / _new_way(data)
"""

ALLOWED = """
import time
import jax

def one_thing(call, n):
    t0 = time.perf_counter()
    jax.block_until_ready(call())
    first = time.perf_counter() - t0
    samples = [sample(call, n) for _ in range(5)]
    return first, samples

def a_runs_batches(fn, batches):
    logs = []
    for i, b in enumerate(batches):
        b0 = time.perf_counter()
        jax.block_until_ready(fn(b))
        logs.append((i, time.perf_counter() - b0))
    return logs

def compared_interleaved(f, g, x):
    return interleaved({"f": lambda: f(x), "g": lambda: g(x)})

def compiled_then_run(fn, x):
    compiled = compile_fn(fn, x)
    call = compiled.call
    t0 = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - t0, [sample(call, 1) for _ in range(5)], measure(fn, x)

def one_or_the_other(dispatched, f, g, x):
    if dispatched:
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
    else:
        t0 = time.perf_counter()
        jax.block_until_ready(g(x))
    return time.perf_counter() - t0

def _sized(data):
    t0 = time.perf_counter()
    write_all(data)
    return time.perf_counter() - t0

def one_routine_twice(data):
    return min(_sized(data), _sized(data))
"""


def test_the_walk_catches_planted_sequential_comparisons():
    hits = sequential_comparisons(textwrap.dedent(PLANTED))
    assert [h.split(":")[0] for h in hits] == [
        "sequential",
        "in_a_loop",
        "by_name",
        "two_measures",
        "helper_per_candidate",
        "switches",
        "two_routines",
    ]
    assert sequential_comparisons(textwrap.dedent(ALLOWED)) == []
