"""The batch-size search of run_batches after a memory error: it lands on the largest size that
fits, also when the room shrinks mid-run (property-tested on the two sizing rules)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batchlab.runs.results import RunState
from batchlab.runs.runner import _after_oom, _after_success


def drive(start: int, limits: list[int]) -> list[int]:
    """The sizes tried, batch by batch; ``limits[k]``: the largest size that fits at batch k."""
    state, size, tried, failed = RunState(10**9), start, [], math.inf
    for limit in limits:
        assert 1 <= size < failed  # every size tried is below the smallest that failed
        tried.append(size)
        if size <= limit:
            size = _after_success(state, size)
        elif size == 1:  # the loop stops here: out of memory at one item
            break
        else:
            size, failed = _after_oom(state, size), size
    return tried


@settings(max_examples=300, deadline=None)
@given(start=st.integers(1, 4096), limit=st.integers(1, 4096))
def test_it_settles_on_the_largest_size_that_fits(start, limit):
    steps = 2 * math.ceil(math.log2(start + 1)) + 2
    tried = drive(start, [limit] * (steps + 3))
    assert tried[-3:] == [min(start, limit)] * 3  # and stays there
    assert max(tried) == start  # never above the size asked for


@settings(max_examples=300, deadline=None)
@given(start=st.integers(2, 1024), first=st.integers(1, 1024), data=st.data())
def test_when_the_room_shrinks_it_settles_again(start, first, data):
    """A size that ran can fail later (another process took memory): the search forgets it."""
    settled = min(start, first)
    later = data.draw(st.integers(1, settled))
    steps = 2 * math.ceil(math.log2(start + 1)) + 2
    tried = drive(start, [first] * steps + [later] * (steps + 3))
    assert tried[-3:] == [later] * 3


def test_the_sizes_tried_halve_until_one_runs_then_bisect():
    # out of memory from 16 down: halves (8, 4), then between what ran and what failed (6, 5)
    assert drive(16, [5] * 8) == [16, 8, 4, 6, 5, 5, 5, 5]
    # 3 fails, 1 runs (3 // 2), 2 fails: it settles on 1
    assert drive(3, [1] * 5) == [3, 1, 2, 1, 1]
    assert drive(2, [1] * 3) == [2, 1, 1]
    # 9 ran, then the room shrank to 4: 9 fails, what ran is forgotten and the search halves again
    assert drive(9, [9, 4, 4, 4, 4, 4, 4]) == [9, 9, 4, 6, 5, 4, 4]
