"""Gateway settings: config values plus the two environment variables that override them.

The API key is deliberately *not* a config value: a resolved ``${oc.env:...}`` would be
written into every saved ``config.yaml``. It is read from the environment (after loading
``.env`` from the working directory) at the moment a gateway is built, and lives only in
memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import UserError

KEY_ENV = "OPENROUTER_API_KEY"
BASE_ENV = "OPENROUTER_API_BASE"


@dataclass(frozen=True)
class GatewaySettings:
    """Everything the gateway needs besides the key (safe to log or save)."""

    api_base: str = "https://openrouter.ai/api/v1"
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    max_concurrency: int = 8
    cache_enabled: bool = True
    cache_path: Path = Path(".cache/audit/responses.sqlite")
    title: str | None = "audit"
    referer: str | None = None

    @classmethod
    def from_config(cls, node: Any) -> GatewaySettings:
        """Build from the ``gateway`` config node; ``OPENROUTER_API_BASE`` wins over ``api_base``."""
        load_dotenv_once()
        cache = node.get("cache") or {}
        attribution = node.get("attribution") or {}
        settings = cls(
            api_base=str(os.environ.get(BASE_ENV) or node.get("api_base", cls.api_base)).rstrip("/"),
            timeout_s=float(node.get("timeout_s", cls.timeout_s)),
            max_retries=int(node.get("max_retries", cls.max_retries)),
            backoff_initial_s=float(node.get("backoff_initial_s", cls.backoff_initial_s)),
            backoff_max_s=float(node.get("backoff_max_s", cls.backoff_max_s)),
            max_concurrency=int(node.get("max_concurrency", cls.max_concurrency)),
            cache_enabled=bool(cache.get("enabled", True)),
            cache_path=Path(str(cache.get("path", cls.cache_path))),
            title=attribution.get("title"),
            referer=attribution.get("referer"),
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        """Reject values that would make every call fail or hang, before any call is made."""
        if not self.api_base.startswith(("http://", "https://")):
            raise UserError(
                f"gateway api_base {self.api_base!r} is not an http(s) URL; "
                f"set gateway.api_base=... or {BASE_ENV}"
            )
        if self.max_concurrency < 1:
            raise UserError("gateway.max_concurrency must be at least 1")
        if self.timeout_s <= 0 or self.max_retries < 0:
            raise UserError("gateway.timeout_s must be > 0 and gateway.max_retries >= 0")


_dotenv_loaded = False


def load_dotenv_once() -> None:
    """Load ``.env`` from the working directory (never overriding the real environment)."""
    global _dotenv_loaded
    if not _dotenv_loaded:
        from dotenv import load_dotenv

        load_dotenv(Path.cwd() / ".env", override=False)
        _dotenv_loaded = True


def require_api_key() -> str:
    """Return the OpenRouter key, or fail with the one line that says how to set it."""
    load_dotenv_once()
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise UserError(
            f"{KEY_ENV} is not set: add '{KEY_ENV}=sk-or-...' to a .env file in this directory "
            f"or export it (see .env.example)"
        )
    return key
