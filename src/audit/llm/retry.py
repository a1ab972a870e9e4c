"""When to retry a failed model call and how long to wait (pure logic, no I/O).

litellm's own retries ignore Retry-After and reset global state on failure, so the
gateway owns this policy: exponential backoff with full jitter, capped, and the server's
Retry-After honoured when it asks for longer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone

# A server may ask for a long pause; beyond this a sweep is better off failing the call.
RETRY_AFTER_CEILING_S = 600.0

RETRYABLE_KINDS = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response", "error_finish", "empty"})


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff schedule; ``rng`` is injectable so tests get deterministic delays."""

    max_retries: int = 5
    initial_s: float = 1.0
    max_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to sleep before retry number ``attempt`` (1-based).

        Full jitter (uniform in [0, cap]) spreads a sweep's retries so parallel jobs do not
        hammer a rate-limited provider in lockstep; a Retry-After is a floor, not a hint.
        """
        cap = min(self.max_s, self.initial_s * (2 ** (attempt - 1)))
        jittered = (rng or random).uniform(0, cap)
        if retry_after is not None:
            return max(jittered, min(retry_after, RETRY_AFTER_CEILING_S))
        return jittered


def is_retryable(kind: str) -> bool:
    """429, 5xx, timeouts, dropped connections, garbled bodies, error finishes and empty replies
    (OpenRouter: "no content generated", retry) are worth another try."""
    return kind in RETRYABLE_KINDS


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Parse a Retry-After header: delta seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())
