"""docs/openrouter.md's table of every documented reply names the test that proves each row: each named
test exists (a renamed or deleted test leaves the row unproven, and the page would not say so)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_the_reply_table_names_exists():
    page = (ROOT / "docs" / "openrouter.md").read_text(encoding="utf-8")
    table = page[page.index("## Every documented reply, handled"):page.index("## Reasoning models")]
    named = set(re.findall(r"\b(test_\w+)\b(?!\.py)", table))
    defined = {name for path in (ROOT / "tests").rglob("test_*.py")
               for name in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), flags=re.M)}
    assert len(named) >= 25
    assert sorted(named - defined) == []
