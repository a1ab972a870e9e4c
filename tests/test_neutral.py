"""Model and server text neutralised where it lands: terminal lines, a set of outputs (CSV cells:
``tests/io/test_table.py``)."""

from __future__ import annotations

import os
import sys

import pytest

from audit.io.atomic import write_texts
from audit.neutral import terminal_text
from audit.testing.replies import error_reply
from audit.testing.scripted_audit import AUDITOR_MODEL
from tests import entrypoints


def test_escape_sequences_and_controls_are_removed_from_terminal_text():
    hostile = "bad key\x1b]0;pwned\x07 \x1b[2J\x1b[31mred\x1b[0m \u202eevil\x9b"
    assert terminal_text(hostile) == "bad key red evil"


def test_a_set_of_outputs_is_written_all_or_none(tmp_path):
    (tmp_path / "a.csv").write_text("old a")
    (tmp_path / "blocker").write_text("a file where a directory should be")
    with pytest.raises(OSError):
        write_texts({tmp_path / "a.csv": "new a", tmp_path / "blocker" / "page.html": "new page"})
    assert (tmp_path / "a.csv").read_text() == "old a"  # the first file was written, but never put in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "blocker"]  # no temporary left
    write_texts({tmp_path / "a.csv": "new a", tmp_path / "b.html": "page"})
    assert (tmp_path / "a.csv").read_text() == "new a" and (tmp_path / "b.html").read_text() == "page"


def test_a_servers_escape_sequences_never_reach_the_terminal(tmp_path, fake_openrouter):
    fake_openrouter.handler = lambda request: error_reply(401, "bad key\x1b]0;pwned\x07\x1b[2J\x1b[1;1H")
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    proc = entrypoints.run([sys.executable, "-m", "audit", f"auditor.model={AUDITOR_MODEL}", "judge=off",
                           "gateway.max_retries=0", "gateway.cache.enabled=false", "output_dir=out"],
                           cwd=tmp_path, env={**base, **fake_openrouter.env()}, capture_output=True, text=True,
                           timeout=120)
    assert proc.returncode == 1 and "bad key" in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_bidi_controls_are_shown_on_pages_not_obeyed():
    from markupsafe import Markup

    from audit.neutral import page_value
    assert page_value("I refuse\u202e.desufer t'now I") == "I refuse[U+202E].desufer t'now I"
    assert page_value("a\u2066b\u2069") == "a[U+2066]b[U+2069]"
    shown = page_value(Markup("<b>x\u202ey</b>"))
    assert isinstance(shown, Markup) and shown == Markup("<b>x[U+202E]y</b>")
    assert page_value(3) == 3 and page_value("plain") == "plain"
