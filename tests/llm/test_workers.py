"""The worker count a setting gives, and which worker a request goes to (the process side is tested
end to end in ``tests/epistemic/test_workers.py``)."""

from __future__ import annotations

import pytest

from audit.errors import UserError
from audit.llm.workers import AUTO_MAX, route_of, worker_count


@pytest.mark.parametrize(("value", "cores", "expected"), [
    (1, 8, 1), (3, 1, 3), ("auto", 1, 1), ("auto", 2, 2), ("AUTO", 64, AUTO_MAX)])
def test_a_setting_gives_a_worker_count(value, cores, expected):
    assert worker_count(value, cores) == expected


@pytest.mark.parametrize("value", [0, -2, "two", 1.5, True, None])
def test_a_bad_worker_count_is_one_line_naming_the_fix(value):
    with pytest.raises(UserError, match=r"workers=.*whole number.*workers=auto"):
        worker_count(value, 2)


def test_the_same_request_always_goes_to_the_same_worker():
    """Identical requests share one flight in the gateway only inside one process."""
    messages = [{"role": "user", "content": "Is the Elbe in Germany?"}]
    options = {"max_tokens": 5, "tag": "epistemic/raw_llm"}
    first = route_of("acme/m", messages, options, 4)
    assert all(route_of("acme/m", [dict(m) for m in messages], dict(options), 4) == first for _ in range(5))
    spread = {route_of("acme/m", [{"role": "user", "content": f"card {n}"}], options, 4) for n in range(64)}
    assert spread == {0, 1, 2, 3}  # different cards go to every worker
