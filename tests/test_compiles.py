"""count_compiles: recompilation made visible."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp

import batchlab as bl


def test_counts_one_compile_per_distinct_shape():
    def ragged_sum(x):
        return x.sum()

    f = jax.jit(ragged_sum)
    xs = [jnp.ones(n) for n in (3, 4, 5, 3, 4)]
    with bl.count_compiles(match="ragged_sum") as c:
        for x in xs:
            f(x).block_until_ready()
    assert c.count == 3
    assert c.names == ["jit(ragged_sum)"] * 3
    assert c.seconds > 0
    assert "count=3" in repr(c)


def test_nested_counters_and_no_match():
    def one(x):
        return x * 3

    f = jax.jit(one)
    with bl.count_compiles() as outer:
        with bl.count_compiles(match="one") as inner:
            f(jnp.ones(7)).block_until_ready()
        f(jnp.ones(7)).block_until_ready()  # cached
    assert inner.count == 1
    assert outer.count >= 1


def test_counting_stops_after_the_block():
    def later(x):
        return x - 1

    f = jax.jit(later)
    with bl.count_compiles(match="later") as c:
        pass
    f(jnp.ones(2)).block_until_ready()
    assert c.count == 0


def test_compiles_in_other_threads_are_counted():
    def threaded(x):
        return x + 2

    f = jax.jit(threaded)
    with bl.count_compiles(match="threaded") as c:
        t = threading.Thread(target=lambda: f(jnp.ones(9)).block_until_ready())
        t.start()
        t.join()
    assert c.count == 1


def test_tracing_and_lowering_are_timed_apart_from_compiling():
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    with bl.count_compiles(match="lambda") as new:
        f(jnp.ones(7))
    with bl.count_compiles(match="lambda") as again:
        f(jnp.ones(7))
    assert new.count == 1 and new.trace_seconds > 0 and new.seconds > 0
    # a cached call neither traces nor compiles
    assert again.count == 0 and again.trace_seconds == 0.0 and again.seconds == 0.0
    with bl.count_compiles(match="no such function") as other:
        f(jnp.ones(8))
    assert other.trace_seconds == 0.0  # `match` filters the tracing events too
