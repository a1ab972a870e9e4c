"""What a sweep's job processes import before they start: the warm launcher imports this module once
(in the sweep's process, or in a fork server), and every job process forked from there starts with these
libraries loaded.

litellm alone costs ~3.5 CPU-seconds per fresh process; a 12-job sweep paid it 12 times.
"""

from __future__ import annotations

import importlib

from audit.llm import backend
from audit.neutral import invisible
from audit.pages import compile_all

backend.litellm()  # offline and quiet, as every job sets it up

import aiohttp  # noqa: E402,F401 - the gateway's connection pools
import audit.censorship.loop  # noqa: E402,F401 - the audit, its prompts and schemas
import audit.censorship.report  # noqa: E402,F401 - every finished run writes its report
import audit.llm.gateway  # noqa: E402,F401
import litellm.llms.custom_httpx.http_handler  # noqa: E402,F401 - imported by the first call's pool
import openai  # noqa: E402,F401 - the raw-completions client

FIRST_CALL = (
    # the callback manager, provider configs, the default tokenizer (cl100k, parsed on load), the proxy's
    # file-id and guardrail helpers (which bring fastapi), the savings meter, the raw-completions resource
    "litellm.integrations.generic_api.generic_api_callback", "litellm.llms.openai_like.dynamic_config",
    "litellm.llms.github_copilot.per_user_auth", "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm.llms.edenai.chat.transformation", "litellm.llms.fal_ai", "litellm.llms.fal_ai.chat.transformation",
    "litellm.llms.litellm_proxy.chat.transformation", "litellm.litellm_core_utils.logging_callback_manager", "fastapi",
    "litellm.llms.opencode.transformation", "litellm.litellm_core_utils.default_encoding",
    "litellm.proxy.guardrails.exception_utils", "litellm.proxy.spend_tracking.savings",
    "litellm.llms.custom_httpx.aiohttp_transport", "openai.resources.completions",
)
"""What litellm imports on its first call rather than at import: left to the job, every job forked
from this server imported ~195 more modules (~0.6 CPU-s). These are litellm's own module names,
which a later release may rename: one that no longer exists is skipped, since it only costs time."""

for _name in FIRST_CALL:
    try:
        importlib.import_module(_name)
    except ImportError:
        pass

JOB_REPORTS = ("audit.censorship.report", "audit.epistemic.report", "audit.benchmark.report")
"""The report modules whose page a job writes at its end: their templates are compiled here once
(~0.4 CPU-s a report), so a job forked from this server renders its page without compiling it."""

for _name in JOB_REPORTS:
    compile_all(importlib.import_module(_name).page_environment())

invisible()  # the table of invisible characters every run's key redactor builds on first use (~0.1 CPU-s)
