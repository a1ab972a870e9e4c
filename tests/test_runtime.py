"""The collector settings of a request phase: applied inside the block, undone after it."""

from __future__ import annotations

import gc

import pytest

from audit.runtime import YOUNG_THRESHOLD, long_lived_heap


def test_block_freezes_the_heap_and_collects_young_objects_less_often():
    before = gc.get_threshold()
    with long_lived_heap():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (max(YOUNG_THRESHOLD, before[0]), *before[1:])
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_block_raises():
    before = gc.get_threshold()
    with pytest.raises(KeyboardInterrupt), long_lived_heap():
        raise KeyboardInterrupt
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
