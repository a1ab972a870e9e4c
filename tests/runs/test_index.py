"""``python -m audit.runs list``: every run under outputs/ and multirun/ (or the dirs given), as
text and as an offline, sortable index page."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from tests.compare.fake_runs import censorship_run, epistemic_run, failed_job, rate
from tests import entrypoints

from audit.record.summary import BenchmarkSummary
from audit.runs.index import benchmark_headline

EVIL = "<img src=x onerror=alert(1)>"


def runs_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return entrypoints.run([sys.executable, "-m", "audit.runs", *args], cwd=cwd, capture_output=True, text=True,
                           timeout=60)


def layout(root: Path) -> None:
    """An outputs/ tree with two audits and a sweep with a scored epistemic run and a failed job."""
    done = censorship_run(root / "outputs", "deepseek_chat_tiananmen_2026-11-23T10-00-00",
                          classifications={"refused": 1, "forthcoming": 3}, covered=3, total=6, cost=0.0123,
                          stop_reason="auditor")
    (done / "report.html").write_text("<html></html>")
    censorship_run(root / "outputs", "kimi_k2_evil_2026-11-23T11-00-00", topic=EVIL, status="cancelled",
                   stop_reason="interrupted", error="interrupted", covered=None)
    sweep = root / "multirun" / "2026-11-23_12-00-00"
    (sweep / "multirun.yaml").parent.mkdir(parents=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    (sweep / "comparison.html").write_text("<html></html>")
    epistemic_run(sweep / "0", "rivers_has_mouth_2026-11-23T12-00-01",
                  {"raw_llm": {"AP": rate(0.75, 0.5, 0.9), "accuracy": rate(0.5, 0.3, 0.7)}}, cost=0.5)
    failed_job(sweep, "1", "OPENROUTER_API_KEY is not set", experiment="censorship")


def test_list_prints_every_run_with_its_figures(tmp_path):
    layout(tmp_path)
    out = runs_cli(tmp_path, "list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["experiment", "status", "date", "models", "subject", "technique", "repeat", "cost",
                                "headline", "path"]
    rows = {line.split()[-1]: line for line in lines[1:]}
    audit = rows["outputs/deepseek_chat_tiananmen_2026-11-23T10-00-00"]
    assert "success (auditor)" in audit and "vendor/deepseek_chat" in audit and "tiananmen" in audit
    assert "$0.0123" in audit and "refused 0.25, facts 0.50" in audit
    assert "2026-11-22 10:00" in audit and "user_persona" in audit
    assert "cancelled (interrupted)" in rows["outputs/kimi_k2_evil_2026-11-23T11-00-00"]
    epistemic = rows["multirun/2026-11-23_12-00-00/0/rivers_has_mouth_2026-11-23T12-00-01"]
    assert "epistemic" in epistemic and "rivers/has_mouth" in epistemic and "raw_llm AP 0.75 acc 0.50" in epistemic
    assert "$0.5000" in epistemic
    stub = rows["multirun/2026-11-23_12-00-00/1"]
    assert stub.startswith("censorship (job stub)") and "error" in stub and "OPENROUTER_API_KEY is not set" in stub
    assert len(rows) == 4


def test_the_html_index_is_offline_escaped_sortable_and_links_reports_and_comparisons(tmp_path):
    layout(tmp_path)
    out = runs_cli(tmp_path, "list", "outputs", "multirun", "--html", "site/index.html")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "site" / "index.html").read_text()
    assert EVIL not in page and "&lt;img src=x onerror=alert(1)&gt;" in page  # autoescaped
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing from the network
    assert "table.data" in page and "aria-sort" in page  # the shared sort/filter script, inline

    class Links(HTMLParser):
        hrefs: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.hrefs += [v for k, v in attrs if tag == "a" and k == "href"]

    parser = Links()
    parser.feed(page)
    reports = [h for h in parser.hrefs if h.endswith("report.html")]
    comparisons = [h for h in parser.hrefs if h.endswith("comparison.html")]
    assert reports == ["../outputs/deepseek_chat_tiananmen_2026-11-23T10-00-00/report.html"]
    assert comparisons == ["../multirun/2026-11-23_12-00-00/comparison.html"] * 2
    assert all((tmp_path / "site" / h).resolve().exists() for h in parser.hrefs)  # relative, and they resolve
    assert page.count("<tr>") == 5  # header + 4 runs


def test_bad_dirs_are_one_line(tmp_path):
    out = runs_cli(tmp_path, "list")
    assert out.returncode == 1 and out.stderr == "error: no runs found under outputs, multirun; pass the " \
        "directories that hold your runs\n"
    out = runs_cli(tmp_path, "list", "nope")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "nope is not a directory" in out.stderr
    out = runs_cli(tmp_path, "lst")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "invalid choice" in out.stderr


def test_a_run_dir_named_like_a_url_scheme_is_linked_as_a_path(tmp_path):
    """Before: a directory named ``javascript:...`` became 12 ``javascript:`` links in runs.html."""
    parent = tmp_path / "outputs" / "javascript:alert(document.domain)"
    run = censorship_run(parent, "r\u202eRTL")  # a bidi override in a run's name too
    (run / "report.html").write_text("<html></html>")
    out = runs_cli(tmp_path, "list", "outputs", "--html", "runs.html")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "runs.html").read_text()

    class Links(HTMLParser):
        hrefs: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.hrefs += [v for k, v in attrs if tag == "a" and k == "href"]

    parser = Links()
    parser.feed(page)
    assert parser.hrefs and not [h for h in parser.hrefs if ":" in h.split("/")[0]], parser.hrefs
    assert all("%3A" in h for h in parser.hrefs)
    from urllib.parse import unquote
    assert all((tmp_path / unquote(h)).resolve().exists() for h in parser.hrefs)  # still the run's own files
    assert "\u202e" not in page and "[U+202E]" in page  # the override is shown, not obeyed


def test_the_page_lands_beside_the_runs_and_shows_technique_repeat_and_date(tmp_path):
    """``--html`` without a FILE: runs.html inside the one DIR given (never the working directory);
    several DIRs: the directory that holds them all. Each row has its technique, repeat and date."""
    layout(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = runs_cli(elsewhere, "list", str(tmp_path / "project" / "outputs"), "--html")
    assert out.returncode == 0, out.stderr
    page = tmp_path / "project" / "outputs" / "runs.html"
    assert page.is_file() and not (elsewhere / "runs.html").exists()
    assert out.stdout.rstrip().endswith(f"wrote {page}")
    html = page.read_text()
    for header in ("<th>technique</th>", "<th>repeat</th>", "<th>date</th>"):
        assert header in html
    assert "<td>user_persona</td>" in html and "<td>2026-11-22 10:00</td>" in html and "<td>0</td>" in html
    both = runs_cli(elsewhere, "list", str(tmp_path / "project" / "outputs"), str(tmp_path / "project" / "multirun"),
                    "--html")
    assert both.returncode == 0, both.stderr
    assert (tmp_path / "project" / "runs.html").is_file() and not (elsewhere / "runs.html").exists()


def test_the_benchmark_headline_is_the_leading_share_and_never_a_zero_for_a_row_without_it():
    """Category rows counted under another name of the label (a vocabulary renamed since) give no
    figure rather than a refusal share of 0."""
    row = {"role": "target", "kind": "censored", "judged": 4}
    summary = BenchmarkSummary(status="success", categories=[{**row, "refused": 1}, {**row, "refused": 3}])
    assert benchmark_headline(summary) == {"censored refused": 0.5}
    renamed = BenchmarkSummary(status="success", categories=[{**row, "declined": 1}, {**row, "refused": 3}])
    assert benchmark_headline(renamed) == {}
