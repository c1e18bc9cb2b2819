"""Notebook 03's exercises: the right answer passes, every wrong one gets a hint, no praise gives a number."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import batchlab as bl
from batchlab import exercises


def test_chunk_count_matches_the_chunked_program():
    # the answer the check accepts is what the kit's chunked program really runs
    jaxpr = jax.make_jaxpr(bl.batch(lambda x: jnp.sin(x).sum(), strategy="chunked", chunk_size=64))(
        jnp.ones((1000, 3))
    )
    assert "length=15" in str(jaxpr)  # 15 loop iterations, then one vmap over the remainder
    r = exercises.check("strategies.chunk_count", 15 + 1)
    assert r.ok
    assert not any(str(n) in r.message for n in (15, 16, 40, 960))  # the praise gives no number


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (15, "full chunks only"),
        (1, "number of dispatches"),
        (17, "Divide 1000 by 64"),
        (16.0, "whole number"),
        (True, "whole number"),
        ("16", "whole number"),
    ],
)
def test_chunk_count_wrong_answers_get_a_hint(answer, hint):
    r = exercises.check("strategies.chunk_count", answer)
    assert not r.ok and hint in r.message and "16" not in r.message


def test_chunk_count_prompt_is_precise():
    text = exercises.prompt("strategies.chunk_count")
    assert "chunk_size=64" in text and "batch_size" not in text and "Give an int" in text


@pytest.mark.parametrize("stub", [..., None])
def test_chunk_count_stub_runs(stub):
    assert not exercises.check("strategies.chunk_count", stub).ok


def test_manual_pairwise_accepts_broadcasting_and_the_expansion():
    def broadcast(xs, ys):
        return jnp.sqrt(((xs[:, None, :] - ys[None]) ** 2).sum(-1))

    def expansion(xs, ys):
        sq = (xs**2).sum(-1)[:, None] + (ys**2).sum(-1)[None, :] - 2 * xs @ ys.T
        return jnp.sqrt(jnp.maximum(sq, 0))

    assert exercises.check("strategies.manual_pairwise", broadcast).ok
    assert exercises.check("strategies.manual_pairwise", expansion).ok
    wrong = exercises.check("strategies.manual_pairwise", lambda xs, ys: broadcast(xs, ys).T)
    assert not wrong.ok and "shape" in wrong.message
    assert "pairwise_all" in exercises.prompt("strategies.manual_pairwise")


def test_host_chunk_size_hints():
    ok = exercises.check(
        "strategies.host_chunk_size", (9.0, 0.23, 66 / 4), items=512, chunks=(8, 256)
    )
    assert ok.ok
    bad = exercises.check(
        "strategies.host_chunk_size", (9.0, 0.23, 32.0), items=512, chunks=(8, 256)
    )
    assert not bad.ok and bad.message.startswith("Count the dispatches")
    # a timing never decides a check: a ratio below 1 (a busy machine) is accepted
    slow = exercises.check(
        "strategies.host_chunk_size", (0.5, 0.23, 66 / 4), items=512, chunks=(8, 256)
    )
    assert slow.ok
    nonsense = exercises.check(
        "strategies.host_chunk_size", (0.0, 0.23, 66 / 4), items=512, chunks=(8, 256)
    )
    assert not nonsense.ok and "positive number" in nonsense.message


@pytest.mark.parametrize("backend", ["cpu", "tpu"])
def test_host_chunk_size_temp_ratio_follows_the_backend(backend, monkeypatch):
    """XLA:TPU fuses the chunk's intermediates: small chunks need not plan fewer extra bytes."""
    from batchlab._util import backend as facts_module

    monkeypatch.setattr(
        "batchlab.exercises.batching.backend_facts", lambda: facts_module.FACTS[backend]
    )
    args = dict(items=512, chunks=(8, 256))
    larger = exercises.check("strategies.host_chunk_size", (9.0, 1.4, 66 / 4), **args)
    assert larger.ok == (backend == "tpu"), larger.message
    if backend == "cpu":
        assert "fewer intermediates" in larger.message
    zero = exercises.check("strategies.host_chunk_size", (9.0, 0.0, 66 / 4), **args)
    assert not zero.ok
