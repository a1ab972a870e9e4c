"""Gateway settings: config values plus the two environment variables that override them.

The API key is deliberately *not* a config value: a resolved ``${oc.env:...}`` would be
written into every saved ``config.yaml``. It is read from the environment (after loading
``.env`` from the working directory) at the moment a gateway is built, and lives only in
memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from audit import config_values
from audit.errors import UserError, unknown_choice
from audit.paths import cache_root

KEY_ENV = "OPENROUTER_API_KEY"
BASE_ENV = "OPENROUTER_API_BASE"
DEFAULT_ENDPOINT = "openrouter"
NO_KEY = "no-key"
"""Sent to endpoints that take no key: the OpenAI SDK under litellm refuses an empty one."""


@dataclass(frozen=True)
class Endpoint:
    """Where a role's calls go: a base URL and the name of the variable holding its key.

    ``key_env`` is None for servers that take no key (a local vLLM or llama.cpp).
    The key itself is never part of this object: it is safe to log and save.
    """

    name: str
    api_base: str
    key_env: str | None = None
    identity: str | None = None
    """What the response cache keys on instead of ``api_base``, for a server whose URL changes
    from run to run while its model does not (the embedded model on an ephemeral port)."""
    timeout_s: float | None = None
    """This endpoint's deadline of one attempt instead of ``gateway.timeout_s`` (the embedded model's,
    scaled to its measured speed); None: the gateway's."""


def default_cache_path() -> Path:
    """The response cache under the cache root, for settings built without ``gateway.cache.path``."""
    return cache_root() / "responses.sqlite"


@dataclass(frozen=True)
class GatewaySettings:
    """Everything the gateway needs besides the key (safe to log or save)."""

    api_base: str = "https://openrouter.ai/api/v1"
    timeout_s: float = 120.0
    """Wall-clock deadline of one attempt: connect, headers and the whole body."""
    max_reply_bytes: int = 8_000_000
    """A reply body longer than this is cut off and fails the call as ``too_large`` (memory stays bounded)."""
    max_retries: int = 5
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    max_concurrency: int = 8
    cache_enabled: bool = True
    cache_path: Path = field(default_factory=default_cache_path)
    cache_wal: bool = True
    """SQLite's write-ahead log (concurrent readers and writers on one machine); off for a cache
    on a filesystem several machines share, where WAL's shared memory does not work."""
    cache_min_free_mb: float = 100.0
    """The cache stops growing when its disk has less free (the run's own files need the room)."""
    title: str | None = "audit"
    referer: str | None = None
    routing_metadata: bool = True
    """Send ``X-OpenRouter-Metadata: enabled``: OpenRouter then adds ``openrouter_metadata`` (the
    endpoints it considered, its attempts) to each reply, which every draw records."""
    stream_min_tokens: int | None = 8192
    """Calls allowed at least this many tokens (their ``max_tokens``) are streamed: a long call the
    deadline cuts off then stops billing at the providers that stop on cancellation, and what it
    sent is known (:mod:`audit.llm.stream_cancel`). 0 streams every call, None none."""
    stream_timeout_s: float = 600.0
    """Wall-clock deadline of one streamed attempt (a long reasoning reply needs more than ``timeout_s``)."""
    extra_endpoints: tuple[Endpoint, ...] = ()
    """Endpoints besides ``openrouter`` (whose base URL is ``api_base``), from ``gateway.endpoints``."""

    def endpoint(self, name: str) -> Endpoint:
        """The endpoint called ``name``; an unknown name lists the configured ones."""
        endpoints = self.endpoints()
        if name not in endpoints:
            raise unknown_choice("endpoint", name, endpoints) from None
        return endpoints[name]

    def endpoints(self) -> dict[str, Endpoint]:
        """Every configured endpoint by name; ``openrouter`` is built from ``api_base``."""
        found = {DEFAULT_ENDPOINT: Endpoint(DEFAULT_ENDPOINT, self.api_base, KEY_ENV)}
        found.update((e.name, e) for e in self.extra_endpoints)
        return found

    def deadline_s(self, name: str, *, streamed: bool = False) -> float:
        """The wall-clock deadline of one attempt at endpoint ``name`` (a streamed one's is ``stream.timeout_s``)."""
        return self.stream_timeout_s if streamed else self._own_deadline(name) or self.timeout_s

    def deadline_setting(self, name: str, *, streamed: bool = False) -> str:
        """The setting :meth:`deadline_s` read, as a user sets it (named when a call hits the deadline)."""
        if streamed:
            return "gateway.stream.timeout_s"
        return f"gateway.endpoints.{name}.timeout_s" if self._own_deadline(name) else "gateway.timeout_s"

    def _own_deadline(self, name: str) -> float | None:
        endpoint = self.endpoints().get(name)
        return endpoint.timeout_s if endpoint is not None else None

    def api_key(self, name: str) -> str:
        """The key of endpoint ``name`` from the environment, or a one-line error naming its variable."""
        endpoint = self.endpoint(name)
        return require_api_key(endpoint.key_env) if endpoint.key_env else NO_KEY

    def keys_for(self, endpoints: Sequence[str]) -> dict[str, str]:
        """The key of each endpoint a run calls, or a one-line error for an unknown endpoint or a missing
        key. Nothing is opened, so an entrypoint can check this before its slow work (the epistemic run
        before it loads the domain and draws the cards) as well as when it builds the gateway."""
        return {name: self.api_key(name) for name in dict.fromkeys(endpoints)}

    @classmethod
    def from_config(cls, node: Any) -> GatewaySettings:
        """Build from the ``gateway`` config node; ``OPENROUTER_API_BASE`` wins over ``api_base``."""
        load_dotenv_once()
        cache = node.get("cache") or {}
        attribution = node.get("attribution") or {}
        endpoints = node.get("endpoints") or {}
        stream = node.get("stream") or {}
        settings = cls(
            api_base=str(os.environ.get(BASE_ENV) or node.get("api_base", cls.api_base)).rstrip("/"),
            timeout_s=_number(node, "timeout_s", cls.timeout_s, above=True),
            max_reply_bytes=_whole(node, "max_reply_bytes", cls.max_reply_bytes, minimum=1),
            max_retries=_whole(node, "max_retries", cls.max_retries, minimum=0),
            backoff_initial_s=_number(node, "backoff_initial_s", cls.backoff_initial_s),
            backoff_max_s=_number(node, "backoff_max_s", cls.backoff_max_s),
            max_concurrency=_whole(node, "max_concurrency", cls.max_concurrency, minimum=1),
            cache_enabled=bool(cache.get("enabled", True)),
            cache_path=Path(str(cache["path"])).expanduser() if cache.get("path") else default_cache_path(),
            cache_wal=bool(cache.get("wal", True)),
            cache_min_free_mb=_cache_min_free_mb(cache.get("min_free_mb")),
            title=attribution.get("title"),
            referer=attribution.get("referer"),
            routing_metadata=bool(node.get("routing_metadata", True)),
            stream_min_tokens=None if "min_tokens" in stream and stream.get("min_tokens") is None
            else _whole(stream, "min_tokens", cls.stream_min_tokens or 0, minimum=0, section="stream"),
            stream_timeout_s=_number(stream, "timeout_s", cls.stream_timeout_s, above=True, section="stream"),
            extra_endpoints=tuple(
                Endpoint(str(name), str(entry.get("api_base") or "").rstrip("/"), entry.get("key_env") or None,
                         entry.get("identity") or None,
                         _endpoint_deadline(str(name), entry.get("timeout_s")))
                for name, entry in endpoints.items() if str(name) != DEFAULT_ENDPOINT
            ),
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
        for endpoint in self.extra_endpoints:
            if not endpoint.api_base.startswith(("http://", "https://")):
                raise UserError(f"endpoint {endpoint.name!r}: api_base {endpoint.api_base!r} is not an http(s) URL; "
                                f"set gateway.endpoints.{endpoint.name}.api_base=http://...")
        if self.max_concurrency < 1:
            raise UserError("gateway.max_concurrency must be at least 1")
        if self.timeout_s <= 0 or self.max_retries < 0:
            raise UserError("gateway.timeout_s must be > 0 and gateway.max_retries >= 0")


def _number(node: Any, key: str, default: float, *, above: bool = False, section: str = "") -> float:
    """``gateway.[<section>.]<key>`` as a number (a one-line error for ``gateway.timeout_s=soon``);
    unset: the default."""
    value = node.get(key)
    if value is None:
        return default
    return config_values.number(_nested(section, key, value), _dotted(section, key), minimum=0.0, above=above,
                                example=default)


def _endpoint_deadline(name: str, value: Any) -> float | None:
    """``gateway.endpoints.<name>.timeout_s`` as a number above 0 (a one-line error otherwise); unset: None."""
    if value is None:
        return None
    key = f"gateway.endpoints.{name}.timeout_s"
    return config_values.number({"gateway": {"endpoints": {name: {"timeout_s": value}}}}, key, minimum=0.0,
                                above=True, example=GatewaySettings.timeout_s)


def _nested(section: str, key: str, value: Any) -> dict[str, Any]:
    """``{"gateway": {section: {key: value}}}`` (no ``section`` level when it is empty)."""
    inner = {key: value}
    return {"gateway": {section: inner} if section else inner}


def _dotted(section: str, key: str) -> str:
    return ".".join(p for p in ("gateway", section, key) if p)


def _cache_min_free_mb(value: Any) -> float:
    if value is None:
        return GatewaySettings.cache_min_free_mb
    key = "gateway.cache.min_free_mb"
    return float(config_values.number({"gateway": {"cache": {"min_free_mb": value}}}, key, minimum=0.0,
                                      example=GatewaySettings.cache_min_free_mb))  # type: ignore[arg-type]


def _whole(node: Any, key: str, default: int, *, minimum: int, section: str = "") -> int:
    """``gateway.[<section>.]<key>`` as a whole number of at least ``minimum``; unset: the default."""
    value = node.get(key)
    if value is None:
        return default
    return config_values.whole_number(_nested(section, key, value), _dotted(section, key), minimum=minimum)


def role_endpoint(role: Any) -> str:
    """The endpoint a role's config node names (``<role>.endpoint``); ``openrouter`` when unset."""
    return str(role.get("endpoint") or DEFAULT_ENDPOINT)


PROVIDER_FIELDS = ("order", "only", "ignore", "allow_fallbacks", "require_parameters", "data_collection", "zdr",
                   "quantizations", "sort", "max_price", "enforce_distillable_text")
"""OpenRouter's provider routing preferences (provider routing guide): a pin is ``only`` (or ``order``
with ``allow_fallbacks: false``), so no call falls back to a provider nobody checked."""


def _plain(value: Any) -> Any:
    from omegaconf import DictConfig, ListConfig, OmegaConf

    return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value


def role_routing(role: Any, where: str) -> dict[str, Any]:
    """A role's ``provider`` pin and request extras as gateway keyword arguments (``provider``,
    ``extra_body``): ``reasoning`` (OpenRouter's reasoning controls, e.g. ``{exclude: true}`` or
    ``{max_tokens: 2000}``) goes into the body beside any ``extra_body``. The same setting on
    every role: audited, auditor, judge (and each panel member), each epistemic system.

    ``where`` names the node in the one-line error for a provider that is not a mapping of
    OpenRouter's routing fields.
    """
    provider = _plain(role.get("provider"))
    if provider is not None:
        unknown = sorted(set(provider) - set(PROVIDER_FIELDS)) if isinstance(provider, dict) else None
        if unknown is None or unknown:
            raise UserError(f"{where}.provider must be a mapping of OpenRouter's routing fields "
                            f"({', '.join(PROVIDER_FIELDS)}), got {provider!r}; e.g. "
                            f"'{where}.provider={{only:[deepinfra],allow_fallbacks:false}}'")
    body = dict(_plain(role.get("extra_body")) or {})
    reasoning = _plain(role.get("reasoning"))
    if reasoning is not None:
        body["reasoning"] = reasoning
    return {"provider": provider or None, "extra_body": body or None}


def record_endpoints(gateway_cfg: Any, settings: GatewaySettings, endpoints: Any) -> None:
    """Write where calls really go into the ``gateway`` node a run saves (config.yaml, summary.json).

    ``api_base`` becomes the effective one (after ``OPENROUTER_API_BASE``), and ``effective``
    maps each endpoint in use to its base URL, so a run says where its answers came from.
    """
    from omegaconf import open_dict

    with open_dict(gateway_cfg):
        gateway_cfg.api_base = settings.api_base
        gateway_cfg.effective = {name: settings.endpoint(name).api_base for name in dict.fromkeys(endpoints)}


_dotenv_loaded = False


def load_dotenv_once() -> None:
    """Load ``.env`` from the working directory (never overriding the real environment)."""
    global _dotenv_loaded
    if not _dotenv_loaded:
        from dotenv import load_dotenv

        load_dotenv(Path.cwd() / ".env", override=False)
        _dotenv_loaded = True


def require_api_key(env: str = KEY_ENV) -> str:
    """Return the key held by variable ``env``, or fail with the one line that says how to set it."""
    load_dotenv_once()
    key = os.environ.get(env, "").strip()
    if not key:
        example = "sk-or-..." if env == KEY_ENV else "..."
        # The two routes that need no key, named where a newcomer without one first stops.
        no_key = ("; no key? add local=true (a small model embedded in the tool) or point OPENROUTER_API_BASE "
                  "at python -m audit.testing.fake_openrouter (a scripted loopback server)") if env == KEY_ENV else ""
        raise UserError(
            f"{env} is not set: add '{env}={example}' to a .env file in this directory "
            f"or export it (see .env.example){no_key}"
        )
    return key
