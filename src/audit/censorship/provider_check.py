"""The doctor's verdicts per provider, kept under the cache root, and the run's check against them.

``python -m audit.doctor`` judges each provider that served its canaries; the verdicts are kept
in ``<cache.dir>/doctor/verdicts.json`` (model -> provider -> ``ok``/``wrapping``/``unsure``), so a
later audit that would sample user persona (raw ``/completions``) from a provider marked as
wrapping refuses to start, with one line naming the doctor command: its draws would be chat
answers, not the model continuing the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from audit.censorship.provenance import pinned_providers, provider_slug, same_provider
from audit.errors import UserError
from audit.io.atomic import read_json, write_json

WRAPPING = "wrapping"
RAW_TECHNIQUES = ("user_persona", "prefill", "auto")
"""Techniques that send raw /completions prompts (auto: its user-persona, prefill and raw_text actions)."""


def verdicts_path(cache_dir: str | Path) -> Path:
    return Path(cache_dir).expanduser() / "doctor" / "verdicts.json"


def load(cache_dir: str | Path) -> dict[str, dict[str, str]]:
    """Every verdict kept so far ({} when the doctor never ran or the file is unreadable)."""
    try:
        data = read_json(verdicts_path(cache_dir))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(cache_dir: str | Path, model: str, verdicts: Mapping[str, str]) -> None:
    """Keep ``verdicts`` (provider -> verdict) of ``model``, over any earlier ones of those providers."""
    if not verdicts:
        return
    data = load(cache_dir)
    data[model] = {**data.get(model, {}), **verdicts}
    path = verdicts_path(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data)


def pin_line(provider: str | None = None) -> str:
    """The override that pins ``provider`` (as a reply names it) alone, by its slug (no fallback to a
    provider nobody checked); without one, the placeholder to fill in."""
    slug = provider_slug(provider) if provider is not None else "<provider>"
    return f"'audited.provider={{only:[{slug}],allow_fallbacks:false}}'"


def check_not_wrapping(cfg: DictConfig) -> None:
    """Refuse a run that would sample raw completions from a provider the doctor marked as wrapping."""
    if str(cfg.technique.name) not in RAW_TECHNIQUES or cfg.get("cache") is None:
        return
    model = str(cfg.audited.model)
    marked = sorted(p for p, v in load(cfg.cache.dir).get(model, {}).items() if v == WRAPPING)
    if not marked:
        return
    pin = cfg.audited.get("provider")
    allowed = pinned_providers(OmegaConf.to_container(pin) if pin is not None else None)  # type: ignore[arg-type]
    reachable = marked if allowed is None else [p for p in marked if any(same_provider(p, a) for a in allowed)]
    if reachable:
        raise UserError(f"provider {', '.join(reachable)} wraps /completions prompts for {model} (doctor's verdict): "
                        f"{cfg.technique.name} draws from it would be chat answers; pin a provider the doctor "
                        f"passed ({pin_line()}) and check it: python -m audit.doctor "
                        f"audited={cfg.audited.name}")
