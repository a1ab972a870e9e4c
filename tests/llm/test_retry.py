import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from audit.llm.retry import RetryPolicy, is_retryable, parse_retry_after


def test_backoff_is_capped_exponential_with_full_jitter():
    policy = RetryPolicy(max_retries=5, initial_s=1.0, max_s=4.0)
    rng = random.Random(1)
    for attempt, cap in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delays = [policy.delay(attempt, rng=rng) for _ in range(200)]
        assert 0 <= min(delays) and max(delays) <= cap
        assert max(delays) > cap * 0.8  # jitter spans the range, not a constant


def test_retry_after_is_a_floor():
    policy = RetryPolicy(initial_s=0.01, max_s=0.02)
    assert policy.delay(1, retry_after=3.0, rng=random.Random(0)) == 3.0


@pytest.mark.parametrize("kind", ["rate_limit", "server", "timeout", "connection", "bad_response"])
def test_transient_kinds_retry(kind):
    assert is_retryable(kind)


@pytest.mark.parametrize("kind", ["bad_request", "auth", "not_found", "context_length"])
def test_client_errors_never_retry(kind):
    assert not is_retryable(kind)


def test_parse_retry_after_seconds_and_dates():
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30)), now=now) == pytest.approx(30)
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-3") == 0.0
