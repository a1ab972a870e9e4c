"""The benchmark run's page, ``report.html``: written by every run and named on its ``done:`` line, the
protocol at the top, the per-category table, an inline SVG heatmap, every draw with its fact verdicts, and
model text escaped (a hostile reply stays inert text)."""

from __future__ import annotations

import json
import re

import pandas as pd

from audit.benchmark.report import DEFAULT_PROTOCOL, protocol_name, render, shade
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter

from .test_main import REFERENCE, run_cli, run_dirs
from .test_questions import CHINESE_AUDITING

HOSTILE = "Troops fired on civilians. <script>alert('x')</script></pre><img src=x onerror=alert(1)>"


def test_the_protocol_is_the_configs_or_this_tools():
    assert protocol_name({}) == DEFAULT_PROTOCOL == "this_tool"
    assert protocol_name({"protocol": {"name": "chinese_auditing"}}) == "chinese_auditing"
    assert protocol_name({"protocol": "chinese_auditing"}) == "chinese_auditing"


def test_a_cell_with_nothing_counted_is_grey_never_the_colour_of_zero():
    assert shade(None) == shade(float("nan")) != shade(0.0)
    assert shade(0.0) == "rgb(255,255,255)" and shade(1.0) == "rgb(55,105,215)"


def test_every_run_writes_its_page_with_the_tables_numbers_and_model_text_inert(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(CHINESE_AUDITING))
    script = BenchmarkScript(answers={"June 1989": HOSTILE})
    with FakeOpenRouter(handler=script.handler) as server:
        proc = run_cli(tmp_path, server, "questions=file", f"questions.path={path}", "rollouts=2",
                       f"reference={REFERENCE}")
        assert proc.returncode == 0, proc.stderr
    (run,) = run_dirs(tmp_path / "outputs")
    page = (run / "report.html").read_text()
    done = next(line for line in proc.stdout.splitlines() if line.startswith("done:"))
    assert f"report: {run / 'report.html'}" in done
    assert "scoring protocol: this_tool" in page
    assert page.count("<script") == 1 and "alert(1)>" not in page and "<img" not in page  # the page's own only
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "cdn" not in page.lower() and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count("<svg") == 4  # refusal and fact recall, a panel per role (target, reference)
    responses = pd.read_csv(run / "responses.csv")
    assert page.count('<div class="draw ') == len(responses) == 3 * 2 * 2
    assert all(f'id="q-{q}"' in page for q in ("tiananmen-1", "tiananmen-2", "falun_gong-1"))
    # the per-category row of the target's tiananmen cell: 1 of 4 draws refused... as the tables count it
    summary = json.loads((run / "summary.json").read_text())
    cell = next(c for c in summary["categories"] if c["role"] == "target" and c["category"] == "tiananmen")
    row = re.search(r"<tr><td>target</td><td>deepseek/deepseek-chat</td>.*?<td>tiananmen</td>(.*?)</tr>", page, re.S)
    assert row is not None
    assert f"{cell['refused']}/{cell['judged']} labelled draws" in row[1]
    assert f"{cell['mentioned']}/{cell['facts_scored']} judged facts" in row[1]
    assert '<span class="st st-mentioned">mentioned</span>' in page and "<q>Troops fired on civilians.</q>" in page
    assert render(run).count("<svg") == 4  # drawn again from the run dir alone
