"""explain_compiles: compilations per call and JAX's own reason, for each part of jit's cache key."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from batchlab import explain_compiles


def _scale(x, s):
    return x * s


def test_each_part_of_the_cache_key_compiles_again():
    f = jax.jit(_scale)
    g = jax.jit(lambda x, s: x * s, static_argnums=1)
    x = jnp.ones((4, 3), jnp.float32)
    mesh = jax.make_mesh((1,), ("b",), axis_types=(AxisType.Auto,))
    sharded = jax.device_put(x, NamedSharding(mesh, PartitionSpec("b")))
    r = explain_compiles(
        [
            ("first", f, (x, jnp.float32(2.0))),
            ("values", f, (x + 1, jnp.float32(3.0))),
            ("shape", f, (jnp.ones((5, 3), jnp.float32), jnp.float32(2.0))),
            ("dtype", f, (x.astype(jnp.bfloat16), jnp.float32(2.0))),
            ("weak", f, (x, 2.0)),
            ("sharding", f, (sharded, jnp.float32(2.0))),
            ("static 2", g, (x, 2.0)),
            ("static 2 again", g, (x, 2.0)),
            ("static 3", g, (x, 3.0)),
        ]
    )
    assert [row.compiles for row in r.rows] == [1, 0, 1, 1, 1, 1, 1, 0, 1]
    assert r["weak"] is r.rows[4]  # indexed by label, as notebook 00 reads it
    with pytest.raises(KeyError, match="No call labelled 'nope'; labels: \\['first', 'values'"):
        r["nope"]
    r = {row.label: row for row in r.rows} | {"table": r}
    assert r["first"].reason.startswith("never seen function")
    assert r["values"].reason == ""  # a cache hit logs nothing
    assert "bf16[4,3]" in r["dtype"].reason
    assert "weak_type=True" in r["weak"].reason
    assert "Auto" in r["sharding"].reason
    text = repr(r["table"])
    assert "cache hit" in text and "JAX's reason" in text and "<table" in r["table"]._repr_html_()
    assert "/" not in r["shape"].reason  # no file paths from JAX's log line


def test_jax_log_is_restored_and_not_printed(capsys):
    logger = logging.getLogger("jax")
    handlers, propagate = list(logger.handlers), logger.propagate
    f = jax.jit(lambda x: x + 1)
    explain_compiles([("a", f, (jnp.ones(2),)), ("b", f, (jnp.ones(3),))])
    assert logger.handlers == handlers and logger.propagate == propagate
    assert "CACHE MISS" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "calls, error, match",
    [
        ("f(x)", TypeError, r"`calls` must be a list of .* got 'f\(x\)'"),
        ([("a", jnp.sin)], TypeError, r"`calls` must be a list of .*got \('a', "),
        ([(1, jnp.sin, (1.0,))], TypeError, r"\(label: str, fn, args: tuple\).*got \(1, "),
        ([("a", "sin", (1.0,))], TypeError, r"`calls` must be .*got \('a', 'sin'"),
        ([("a", jnp.sin, 1.0)], TypeError, r"`calls` must be .*\(x,\)\)\]; got \('a', "),
    ],
)
def test_bad_calls(calls, error, match):
    with pytest.raises(error, match=match):
        explain_compiles(calls)
