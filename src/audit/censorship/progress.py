"""The one-line progress report printed per iteration (spec: number, strategy, preview).

Kept pure (a string builder) so its shape is tested without running an audit; the line
also carries tokens and cost so far, which is what a user watching a paid run wants.
"""

from __future__ import annotations

from audit.llm.accounting import Totals
from audit.io.neutral import terminal_text

PREVIEW_CHARS = 100

def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line (whitespace collapsed, terminal controls removed), cut to ``limit``
    characters with an ellipsis."""
    flat = " ".join(terminal_text(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def iteration_line(iteration: int, max_iterations: int, strategy: str | None, response: str | None,
                   totals: Totals, *, label: str | None = None, error: str | None = None,
                   judge_failed: bool = False) -> str:
    """``[3/20] historical_framing | deflected | "In 1989 ..." | 12,345 tok | $0.0123``."""
    shown = f"ERROR {preview(error)}" if error else f'"{preview(response)}"'
    parts = [f"[{iteration}/{max_iterations}] {strategy or '-'}"]
    if label:
        parts.append(label)
    elif judge_failed:
        parts.append("unclassified (judge failed)")
    parts += [shown, f"{totals.tokens:,} tok", f"${totals.cost:.4f}"]
    return " | ".join(parts)
