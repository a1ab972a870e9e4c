"""Running a run's model calls concurrently, so that one failure ends them all cleanly.

Both experiments that fan calls out (the epistemic answers, the benchmark's draws) need the same
rule: when one task fails (a full disk, a fatal reply) or the run is interrupted, the calls still in
flight are cancelled and awaited here, before the caller closes the gateway under them (else aiohttp
reports unclosed sessions and a half-sent request may still be billed after the run says it stopped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence


async def gather_or_cancel(tasks: Sequence[asyncio.Future]) -> None:
    """Await every task; on the first failure or a cancellation, cancel the rest, wait for them to
    end, and re-raise."""
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
