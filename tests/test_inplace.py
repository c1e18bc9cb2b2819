"""In-place updates in JAX: copies outside jit, none inside, donation and its pitfalls."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import batchlab
from batchlab import exercises


def upd(x):
    return x.at[0].set(1)


def wrap(fn):
    def wrapper(*args, **kwargs):  # hides fn's parameter names from jax.jit
        return fn(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int32, jnp.bfloat16])
@pytest.mark.parametrize("size", [1, 7, 256])
def test_update_outside_jit_copies(dtype, size):
    r = batchlab.eager_update(jnp.zeros(size, dtype))
    assert r.new_buffer and r.original_unchanged
    assert r.nbytes == size * jnp.dtype(dtype).itemsize
    assert "EagerUpdate(" in repr(r) and "<table" in r._repr_html_()


# size 1 is left out on purpose: setting the only element makes the result a
# constant, which XLA copies into the output whatever was donated.
@pytest.mark.parametrize("size", [2, 100, 4096])
def test_update_inside_jit(maybe_jit, size):
    x = jax.ShapeDtypeStruct((size,), jnp.float32)
    on_argument = batchlab.compiled_update(maybe_jit(upd), x)
    donated = batchlab.compiled_update(upd, x, donate_argnums=0)
    intermediate = batchlab.compiled_update(lambda x: jnp.sin(x).at[0].set(1.0), x)
    assert on_argument.copies >= 1
    assert donated.copies == 0 and donated.memory.alias_bytes == 4 * size
    assert intermediate.copies == 0 and intermediate.memory.temp_bytes == 0
    assert "CompiledUpdate(" in repr(donated) and "<table" in donated._repr_html_()


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int32])
def test_donation_alias_bytes_equal_the_donated_buffer(dtype):
    x = jnp.zeros((33, 5), dtype)
    d = batchlab.donate(upd, x)
    assert d.alias_bytes == x.nbytes == d.donated_bytes
    assert d.deleted == (("args[0]", True),) and d.warning is None
    assert not x.is_deleted()  # the caller's array is never consumed
    assert "Donation(" in repr(d) and "<table" in d._repr_html_()


def test_unusable_donation_warns_and_keeps_the_array():
    d = batchlab.donate(lambda x: x.sum(), jnp.zeros(64))
    assert d.alias_bytes == 0 and not d.any_deleted
    assert "not usable" in d.warning


def test_keyword_pitfall():
    x = jnp.zeros(64)
    by_name = batchlab.donate(upd, x=x)  # jit reads the name from upd's signature
    hidden = batchlab.donate(wrap(upd), x=x)  # a *args/**kwargs wrapper: nothing to match
    positional = batchlab.donate(wrap(upd), x)
    assert by_name.any_deleted and by_name.alias_bytes == x.nbytes
    assert not hidden.any_deleted and hidden.alias_bytes == 0 and hidden.warning is None
    assert positional.any_deleted


def test_exercise_donation():
    step = lambda p, g: p - 0.1 * g  # noqa: E731
    p, g = jnp.ones(32), jnp.ones(32)
    ctx = dict(step=step, args=(p, g), params_index=0)
    assert exercises.check("fragmentation.donation_alias", (0,), **ctx)
    assert not exercises.check("fragmentation.donation_alias", (), **ctx)
    assert not exercises.check("fragmentation.donation_alias", ("p",), **ctx)
    with pytest.warns(UserWarning, match="donated buffers were not usable"):  # g: not reused
        r = exercises.check("fragmentation.donation_alias", (0, 1), **ctx)
    assert not r and "also donated position(s) [1]" in r.message


def test_errors():
    with pytest.raises(TypeError, match=r"`x` must be a jax.Array"):
        batchlab.eager_update([1, 2, 3])
    with pytest.raises(TypeError, match=r"must be a function"):
        batchlab.donate(None, jnp.ones(3))
    with pytest.raises(TypeError, match=r"`args\[0\]` must be a jax.Array"):
        batchlab.donate(upd, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"`donate_argnums` must (hold ints|be an int)"):
        batchlab.donate(upd, jnp.ones(3), donate_argnums="x")
    with pytest.raises(TypeError, match=r"JAX can only trace"):
        batchlab.compiled_update(upd, "x")


def test_copy_count_reads_synchronous_and_asynchronous_copies():
    """An HLO ``copy`` and an asynchronous ``copy-start`` (a TPU's) count once each; the pair's
    ``copy-done`` and uses of a value named ``copy`` do not."""
    from batchlab.measuring.inplace import _COPY

    lines = {
        "  %copy.1 = f32[4]{0} copy(f32[4]{0} %p)": True,
        "  %copy-start = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(f32[4]{0} %p)": True,
        "  %copy-done = f32[4]{0} copy-done((f32[4]{0}, f32[4]{0}, u32[]) %copy-start)": False,
        "  %add = f32[4]{0} add(f32[4]{0} %copy, f32[4]{0} %b)": False,
        "  ROOT %t = (f32[4]{0}) tuple(f32[4]{0} %copy.1)": False,
    }
    assert {line: bool(_COPY.search(line)) for line in lines} == lines
