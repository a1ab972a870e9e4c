"""The doctor's verdicts per provider, kept under the cache root, and the run's check against them.

``python -m audit.doctor`` judges each provider that served its canaries; each verdict is kept in
``<cache.dir>/doctor/verdicts.json`` bound to where it was reached: the endpoint (its base URL, or
its cache identity for a server whose URL changes), the model id and the provider, with the date
and the test that decided it. A later audit that would sample user persona (raw ``/completions``)
from a provider marked as wrapping *on the same endpoint* refuses to start, with one line naming
the endpoint, the date and the command that clears the verdict: its draws would be chat answers,
not the model continuing the user. A verdict reached on another server (a loopback server tried
by hand, a local vLLM) says nothing about this one and never refuses a run.

Verdicts written before they were bound to an endpoint (``model -> provider -> verdict``) are read
as of an unknown endpoint: listed and forgettable, never a reason to refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.censorship.provenance import pinned_providers, provider_slug, same_provider
from audit.errors import UserError
from audit.io.atomic import read_json, write_json
from audit.llm.settings import GatewaySettings, role_endpoint

WRAPPING = "wrapping"
RAW_TECHNIQUES = ("user_persona", "prefill", "auto")
"""Techniques that send raw /completions prompts (auto: its user-persona, prefill and raw_text actions)."""
UNKNOWN_ENDPOINT = "unknown (kept before verdicts named their endpoint)"


@dataclass(frozen=True)
class Verdict:
    """One provider's verdict for one model, where and when it was reached and what decided it."""

    endpoint: str
    model: str
    provider: str
    verdict: str
    date: str = ""
    decided_by: str = ""

    def same_place(self, other: Verdict) -> bool:
        return (self.endpoint, self.model) == (other.endpoint, other.model) and same_provider(self.provider,
                                                                                             other.provider)

    def line(self) -> str:
        """``2026-11-28  wrapping  moonshotai/kimi-k2 via Wrapper at https://... (token canary billed as a wrap)``."""
        why = f" ({self.decided_by})" if self.decided_by else ""
        return f"{self.date or 'undated':<10}  {self.verdict:<8}  {self.model} via {self.provider} at {self.endpoint}{why}"


def verdicts_path(cache_dir: str | Path) -> Path:
    return Path(cache_dir).expanduser() / "doctor" / "verdicts.json"


def load(cache_dir: str | Path) -> list[Verdict]:
    """Every verdict kept so far ([] when the doctor never ran or the file is unreadable)."""
    try:
        data = read_json(verdicts_path(cache_dir))
    except (OSError, ValueError):
        return []
    if isinstance(data, dict) and isinstance(data.get("verdicts"), list):
        return [v for v in map(_verdict, data["verdicts"]) if v is not None]
    if isinstance(data, dict):  # before verdicts were bound to an endpoint: model -> provider -> verdict
        return [Verdict(UNKNOWN_ENDPOINT, str(model), str(provider), str(verdict))
                for model, providers in data.items() if isinstance(providers, dict)
                for provider, verdict in providers.items()]
    return []


def _verdict(entry: Any) -> Verdict | None:
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in
                                              ("endpoint", "model", "provider", "verdict")):
        return None
    return Verdict(**{k: str(entry.get(k) or "") for k in Verdict.__dataclass_fields__})


def _save(cache_dir: str | Path, verdicts: Iterable[Verdict]) -> None:
    path = verdicts_path(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"verdicts": [asdict(v) for v in verdicts]})


def remember(cache_dir: str | Path, found: Iterable[Verdict]) -> None:
    """Keep ``found``, over any earlier verdict of the same endpoint, model and provider."""
    found = list(found)
    if not found:
        return
    kept = [old for old in load(cache_dir) if not any(old.same_place(new) for new in found)]
    _save(cache_dir, [*kept, *found])


def forget(cache_dir: str | Path, endpoint: str, model: str) -> list[Verdict]:
    """Drop the verdicts of ``model`` on ``endpoint`` (and those of no known endpoint); return them."""
    every = load(cache_dir)
    gone = [v for v in every if v.model == model and v.endpoint in (endpoint, UNKNOWN_ENDPOINT)]
    if gone:
        _save(cache_dir, [v for v in every if v not in gone])
    return gone


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def audited_endpoint(cfg: DictConfig) -> str:
    """Where the audited model's calls go: its endpoint's cache identity, else its base URL (after
    ``OPENROUTER_API_BASE``), as the gateway resolves it."""
    endpoint = GatewaySettings.from_config(cfg.gateway).endpoint(role_endpoint(cfg.audited))
    return endpoint.identity or endpoint.api_base


def pin_line(provider: str | None = None) -> str:
    """The override that pins ``provider`` (as a reply names it) alone, by its slug (no fallback to a
    provider nobody checked); without one, the placeholder to fill in."""
    slug = provider_slug(provider) if provider is not None else "<provider>"
    return f"'audited.provider={{only:[{slug}],allow_fallbacks:false}}'"


def check_not_wrapping(cfg: DictConfig) -> None:
    """Refuse a run that would sample raw completions from a provider the doctor marked as wrapping
    on this run's endpoint."""
    if str(cfg.technique.name) not in RAW_TECHNIQUES or cfg.get("cache") is None:
        return
    model = str(cfg.audited.model)
    endpoint = audited_endpoint(cfg)
    marked = [v for v in load(cfg.cache.dir) if v.verdict == WRAPPING and v.model == model and v.endpoint == endpoint]
    pin = cfg.audited.get("provider")
    allowed = pinned_providers(OmegaConf.to_container(pin) if pin is not None else None)  # type: ignore[arg-type]
    reachable = marked if allowed is None else [v for v in marked if any(same_provider(v.provider, a) for a in allowed)]
    if reachable:
        first = reachable[0]
        raise UserError(f"provider {', '.join(v.provider for v in reachable)} wraps /completions prompts for {model} "
                        f"at {endpoint} (doctor's verdict of {first.date or 'an unknown date'}"
                        f"{': ' + first.decided_by if first.decided_by else ''}): {cfg.technique.name} draws from it "
                        f"would be chat answers; pin a provider the doctor passed ({pin_line()}) and check it: "
                        f"python -m audit.doctor audited={cfg.audited.name}, or clear the verdict: "
                        f"python -m audit.doctor audited={cfg.audited.name} verdicts=forget")
