"""What a sweep's job processes import before they start: the warm launcher's fork server imports
this module once, and every job process forked from it starts with these libraries loaded.

litellm alone costs ~3.5 CPU-seconds per fresh process; a 12-job sweep paid it 12 times.
"""

from __future__ import annotations

from audit.llm import backend

backend.litellm()  # offline and quiet, as every job sets it up

import aiohttp  # noqa: E402,F401 - the gateway's connection pools
import audit.censorship.loop  # noqa: E402,F401 - the audit, its prompts and schemas
import audit.censorship.report  # noqa: E402,F401 - every finished run writes its report
import audit.llm.gateway  # noqa: E402,F401
import litellm.llms.custom_httpx.http_handler  # noqa: E402,F401 - imported by the first call's pool
import openai  # noqa: E402,F401 - the raw-completions client
