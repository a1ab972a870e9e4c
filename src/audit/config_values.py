"""Typed reads of config values, checked when the config is loaded (pure: no I/O).

Hydra passes ``max_iterations=abc`` through as the string ``'abc'`` and ``sampling.temperature=-1``
as a number no provider accepts; read with ``int()`` deep in a run they surface as a
traceback, or as a run that pays for calls and then fails. Every entrypoint reads its
numbers through these helpers before anything is written, so a bad value is one
:class:`~audit.errors.UserError` naming the key, what it must be and an example.
"""

from __future__ import annotations

from typing import Any

from omegaconf import ListConfig, OmegaConf

from audit.errors import UserError

TEMPERATURE_RANGE = (0.0, 2.0)
"""What OpenAI-compatible servers (OpenRouter, vLLM, llama.cpp) accept for ``temperature``."""


def _value(cfg: Any, key: str) -> Any:
    """The value at dotted ``key`` of a config node or a plain mapping."""
    node = cfg if OmegaConf.is_config(cfg) else OmegaConf.create(cfg)
    return OmegaConf.select(node, key, default=None)


def whole_number(cfg: Any, key: str, *, minimum: int, optional: bool = False) -> int | None:
    """The integer at ``key`` (at least ``minimum``); None when ``optional`` and unset."""
    value = _value(cfg, key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().lstrip("-").isdigit() \
            or int(value) < minimum:
        unset = " or null" if optional else ""
        raise UserError(f"{key}={value!r}: give a whole number of at least {minimum}{unset} "
                        f"(e.g. {key}={max(minimum, 3)})")
    return int(value)


def number(cfg: Any, key: str, *, minimum: float, example: float, maximum: float | None = None,
           optional: bool = False, above: bool = False) -> float | None:
    """The number at ``key``, in ``[minimum, maximum]`` (``above``: strictly above ``minimum``)."""
    value = _value(cfg, key)
    if value is None and optional:
        return None
    try:
        parsed = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        parsed = None
    too_low = parsed is not None and (parsed <= minimum if above else parsed < minimum)
    if parsed is None or parsed != parsed or too_low or (maximum is not None and parsed > maximum):
        bounds = f"above {minimum:g}" if above else f"at least {minimum:g}"
        if maximum is not None:
            bounds = f"from {minimum:g} to {maximum:g}"
        unset = " or null" if optional else ""
        raise UserError(f"{key}={value!r}: give a number {bounds}{unset} (e.g. {key}={example:g})")
    return parsed


def temperature(cfg: Any, key: str) -> float | None:
    """A sampling temperature (optional: null leaves it to the server)."""
    low, high = TEMPERATURE_RANGE
    return number(cfg, key, minimum=low, maximum=high, optional=True, example=0.7)


def max_tokens(cfg: Any, key: str) -> int | None:
    """A completion-length cap (optional: null leaves it to the server)."""
    return whole_number(cfg, key, minimum=1, optional=True)


def model_id(cfg: Any, key: str) -> str:
    """A non-empty model id."""
    value = _value(cfg, key)
    if value is None or not str(value).strip():
        raise UserError(f"{key} is empty: give the model id the endpoint serves (e.g. {key}=deepseek/deepseek-chat)")
    return str(value)


def as_list(value: Any) -> list[str]:
    """A config value given as one string, a comma list, or a YAML list → list of strings."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, ListConfig)):
        return [str(v) for v in value]
    return [part.strip() for part in str(value).split(",") if part.strip()]
