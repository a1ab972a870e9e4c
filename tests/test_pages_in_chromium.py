"""The comparison and both run reports in a real headless Chromium: no console errors, no
horizontal overflow at 1,280 px, the map and charts render (screenshot), sorting and filtering
change the visible rows, links resolve, and a ``<script>`` and an ``onerror`` attribute
planted in model output stay text."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from audit.censorship.report import write_report as write_run_report
from audit.compare.build import compare
from audit.epistemic.metrics import compute_metrics
from audit.epistemic.report import write_report as write_epistemic_report
from tests.chromium import Chromium, Page, chromium_binary
from tests.compare.fake_runs import censorship_run, epistemic_run, rate
from tests.epistemic.test_report import rows_and_cards

pytestmark = pytest.mark.skipif(chromium_binary() is None,
                                reason="chromium is not installed (Debian: apt-get install -y chromium)")

PAYLOAD = """<script>window.__pwned = "script"</script><img src="x" onerror="window.__pwned = 'onerror'">"""
WIDTH = 1280
NARROW = 1000


def build_site(tmp_path: Path) -> dict[str, Path]:
    """A sweep of censorship runs (2 models x 2 topics, user_persona with baseline, plus assistant
    runs) and one epistemic run, each with its report, and the comparison over them."""
    runs = tmp_path / "sweep"
    for model in ("deepseek_chat", "kimi_k2"):
        for topic in ("tibet", "tibet_zh"):
            for repeat in (1, 2):
                run = censorship_run(runs, f"{model}_{topic}_persona_{repeat}", audited=model, topic=topic,
                                     classifications={"refused": repeat, "forthcoming": 4 - repeat},
                                     baseline={"refused": 3, "official_line": 1}, contradicted=1)
                write_run_report(run)
            run = censorship_run(runs, f"{model}_{topic}_assistant", audited=model, topic=topic, technique="assistant",
                                 classifications={"refused": 3, "official_line": 1}, covered=1)
            write_run_report(run)
    planted = runs / "deepseek_chat_tibet_persona_1"
    (planted / "audited_responses" / "001.json").write_text(json.dumps({
        "iteration": 1, "prompt_sent": "What happened in Lhasa?", "raw_response": f"Nothing happened. {PAYLOAD}",
        "error": None, "technique": "user_persona", "classification": {"label": "official_line", "rationale": PAYLOAD}}))
    write_run_report(planted)
    rows, cards = rows_and_cards()
    for row in rows:
        if row["raw_output"] is not None:
            row["raw_output"] = f"UNKNOWN {PAYLOAD}"
    ep = epistemic_run(runs, "epistemic_rivers", {"kg_oracle": {"AP": rate(1.0, 0.9, 1.0), "LA": rate(1.0, 0.8, 1.0)},
                                                  "raw_llm:m": {"AP": rate(0.4, 0.2, 0.6), "LA": None}})
    write_epistemic_report(ep / "report.html", compute_metrics(rows), rows, cards, {})
    compare([runs], tmp_path / "cmp")
    return {"comparison": tmp_path / "cmp" / "comparison.html", "run": planted / "report.html",
            "epistemic": ep / "report.html"}


async def common_checks(page: Page, path: Path, shot: Path) -> None:
    await page.open(path, width=WIDTH)
    assert await page.js("window.__pwned === undefined"), "planted model output ran"
    assert await page.js("document.documentElement.scrollWidth") <= WIDTH, "horizontal overflow at 1,280 px"
    assert (await page.screenshot(shot)).stat().st_size > 10_000
    assert page.errors == []


VISIBLE_ROWS = "(t) => Array.from(t.tBodies[0].rows).filter(r => !r.hidden)"


async def filter_rows(page: Page, table: str, text: str) -> list[str]:
    """Type ``text`` into the filter box of ``table`` (a JS expression); the visible rows' text."""
    return await page.js(f"""(() => {{ const t = {table};
        const box = (t.closest('.colgroups') || t.closest('.scroll')).previousElementSibling;
        box.value = {json.dumps(text)}; box.dispatchEvent(new Event('input'));
        return ({VISIBLE_ROWS})(t).map(r => r.textContent); }})()""")


async def check_comparison(page: Page, path: Path, shot: Path) -> dict[str, Any]:
    await common_checks(page, path, shot)
    audits = "Array.from(document.querySelectorAll('table.data')).find(t => t.tHead.textContent.includes('iterations'))"
    assert await page.js("document.querySelectorAll('svg.chart').length") >= 3 + 2  # refusal, recall, gap; epistemic
    assert await page.js("Array.from(document.querySelectorAll('.maps .multiple h3')).map(h => h.textContent)") == \
        ["assistant", "assistant (baseline)", "user_persona"]  # one map per technique
    assert await page.js("document.querySelectorAll('figcaption.legend .key').length") >= 2
    assert await page.js("document.querySelectorAll('.multiple h3')[3].textContent") == "AP"  # epistemic matrices
    everything = await page.js(f"({VISIBLE_ROWS})({audits}).length")
    kimi = await filter_rows(page, audits, "kimi")
    assert 0 < len(kimi) < everything and all("kimi" in row for row in kimi)
    assert len(await filter_rows(page, audits, "")) == everything
    first_cells = f"({VISIBLE_ROWS})({audits}).map(r => r.cells[0].textContent.trim())"
    header = f"{audits}.tHead.rows[0].cells[0]"
    await page.js(f"{header}.click()")
    ascending = await page.js(first_cells)
    await page.js(f"{header}.click()")
    descending = await page.js(first_cells)
    assert ascending == sorted(ascending) and descending == ascending[::-1] and ascending != descending
    assert_no_family_split(await family_groups(page))
    hrefs = await page.js("Array.from(document.querySelectorAll('a[href]:not(.def)'))"  # not the glossary links,
                          ".filter(a => !a.closest('table[data-part]:not([data-part=\"1\"])'))"  # a row's name, once
                          ".map(a => a.href)")
    return {"hrefs": hrefs}


async def family_groups(page: Page) -> list[list[list[str]]]:
    """Per table cut into column groups, per group, the families of its columns (glossary.js's data-family)."""
    return await page.js("""Array.from(document.querySelectorAll('.colgroups')).map((holder) =>
        Array.from(holder.querySelectorAll('table[data-part]')).map((t) =>
            Array.from(t.tHead.rows[0].cells).filter((th) => th.dataset.family).map((th) => th.dataset.family)))""")


def assert_no_family_split(tables: list[list[list[str]]]) -> None:
    """Each table cut into column groups (its groups' family headers, per group) has each family of
    columns (``audit.pages.tools.FAMILIES``) in one group; the comparison's audits table is cut and
    has its citations and its facts revealed with and without the technique side by side."""
    for groups in tables:
        for family in {f for group in groups for f in group}:
            assert sum(family in group for group in groups) == 1, f"family {family!r} split over groups: {groups}"
    cut = {f for groups in tables if len(groups) > 1 for group in groups for f in group}
    assert {"citations *", "facts revealed *", "tokens"} <= cut


def test_comparison_and_run_reports_in_chromium(tmp_path: Path) -> None:
    site = build_site(tmp_path)

    async def scenario() -> dict[str, Any]:
        async with Chromium() as browser:
            found = await check_comparison(await browser.page(), site["comparison"], tmp_path / "comparison.png")
            narrow = await browser.page()  # more groups, more places to cut (before families: 3 cut at 1,000 px)
            await narrow.open(site["comparison"], width=NARROW)
            assert await narrow.js("document.documentElement.scrollWidth") <= NARROW
            assert_no_family_split(await family_groups(narrow))

            run = await browser.page()
            await common_checks(run, site["run"], tmp_path / "run.png")
            assert await run.js("document.body.textContent.includes('window.__pwned = \"script\"')")  # shown as text
            entries = "Array.from(document.querySelectorAll('.cards > .entry'))"
            assert await run.js(f"{entries}.length") == 1
            await run.js("""(() => { const box = document.querySelector('input.filter');
                box.value = 'no such words'; box.dispatchEvent(new Event('input')); })()""")
            assert await run.js(f"{entries}.filter(e => !e.hidden).length") == 0

            epistemic = await browser.page()
            await common_checks(epistemic, site["epistemic"], tmp_path / "epistemic.png")
            cards = "Array.from(document.querySelectorAll('.cards > details'))"
            assert await epistemic.js(f"{cards}.length") == 2
            await epistemic.js("""(() => { const box = document.querySelector('input.filter');
                box.value = 'near_miss'; box.dispatchEvent(new Event('input')); })()""")
            assert await epistemic.js(f"{cards}.filter(d => !d.hidden).map(d => d.querySelector('b').textContent)") \
                == ["C1"]
            assert await epistemic.js("document.body.textContent.includes(\"onerror=\")")
            return found

    found = asyncio.run(scenario())
    targets = [Path(unquote(urlparse(h).path)) for h in found["hrefs"] if h.startswith("file:")]
    assert len(targets) == 12 + 2  # every audit run; the epistemic run on each of its 2 rows
    assert all(t.is_file() and t.name == "report.html" for t in targets)
    print(f"screenshots in {tmp_path}")  # for a human: comparison.png shows the maps and charts


def test_an_epistemic_report_past_its_inline_cards_shows_the_rest_on_demand_as_text(tmp_path: Path) -> None:
    """Cards past INLINE_CARDS are in files beside the page; "more cards" loads them (drawn by the same
    macro as the cards in the page), and model text that tries to close the script or plant markup
    stays text."""
    from audit.epistemic.report import CHUNK_CARDS, INLINE_CARDS

    planted = '</script><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    extra = CHUNK_CARDS + 3
    rows, cards = [], {}
    for i in range(INLINE_CARDS + extra):
        card_id = f"c{i:05d}"
        cards[card_id] = {"id": card_id, "facts": [f"fact {i}"], "question": "q?", "gold": "YES", "label": "E"}
        rows.append({"id": card_id, "gold": "YES", "pred": "YES", "pass": True, "system": "raw_llm:m", "label": "E",
                     "reason": "ok", "error": None, "raw_output": planted if i == INLINE_CARDS + extra - 1 else "{}"})
    page_path = tmp_path / "report.html"
    write_epistemic_report(page_path, compute_metrics(rows), rows, cards, {})

    async def scenario() -> list[Any]:
        async with Chromium() as browser:
            page = await browser.page()
            await page.open(page_path, width=WIDTH)
            shown = "document.querySelectorAll('.cards > details').length"
            counts = [await page.js(shown)]
            for _ in range(2):  # each click loads the next file beside the page: wait for its cards
                counts.append(await page.js(f"""new Promise((done) => {{ const before = {shown};
                    document.getElementById('more-entries').click();
                    const t = setInterval(() => {{ if ({shown} !== before) {{ clearInterval(t); done({shown}); }} }}, 20);
                    setTimeout(() => {{ clearInterval(t); done({shown}); }}, 10000); }})"""))
            counts.append(await page.js("document.getElementById('more-entries') === null"))
            counts.append(await page.js("window.__pwned === undefined"))
            counts.append(await page.js(f"document.body.textContent.includes({json.dumps(planted)})"))
            counts.append(page.errors)
            return counts

    assert asyncio.run(scenario()) == [INLINE_CARDS, INLINE_CARDS + CHUNK_CARDS, INLINE_CARDS + extra,
                                       True, True, True, []]
    assert sorted(p.name for p in (tmp_path / "report_cards").iterdir()) == ["0000.js", "0001.js"]


def test_an_audit_transcript_past_its_inline_entries_comes_in_on_demand(tmp_path: Path, monkeypatch) -> None:
    """Entries past INLINE_ENTRIES are in files beside the page, the same paging as the epistemic
    cards (audit.pages.paging); "more entries" loads them, autoescaped like the rest (the planted
    payload stays text)."""
    from audit.censorship import report

    monkeypatch.setattr(report, "INLINE_ENTRIES", 2)
    monkeypatch.setattr(report, "CHUNK_ENTRIES", 2)
    run = censorship_run(tmp_path, "long_run")
    for i in range(1, 6):
        (run / "audited_responses" / f"{i:03d}.json").write_text(json.dumps({
            "iteration": i, "prompt_sent": "q", "raw_response": f"answer {i} {PAYLOAD}", "error": None,
            "technique": "user_persona"}))
    write_run_report(run)

    async def scenario() -> list[Any]:
        async with Chromium() as browser:
            page = await browser.page()
            await page.open(run / "report.html", width=WIDTH)
            shown = "document.querySelectorAll('#transcript > .entry').length"
            seen = [await page.js(shown)]
            for _ in range(2):
                seen.append(await page.js(f"""new Promise((done) => {{ const before = {shown};
                    document.getElementById('more-entries').click();
                    const t = setInterval(() => {{ if ({shown} !== before) {{ clearInterval(t); done({shown}); }} }}, 20);
                    setTimeout(() => {{ clearInterval(t); done({shown}); }}, 10000); }})"""))
            seen += [await page.js("document.getElementById('more-entries') === null"),
                     await page.js("window.__pwned === undefined"),
                     await page.js(f"document.body.textContent.includes({json.dumps(PAYLOAD)})"), page.errors]
            return seen

    assert asyncio.run(scenario()) == [2, 4, 5, True, True, True, []]
    assert sorted(p.name for p in (run / "report_entries").iterdir()) == ["0000.js", "0001.js"]


FITS = """Array.from(document.querySelectorAll('table')).filter(t => t.offsetParent !== null && !t.closest('#glossary'))
  .map(t => { const box = t.closest('.scroll') || t.parentElement;
              return {head: (t.rows[0] || {textContent: ''}).textContent.slice(0, 60), width: t.scrollWidth, box: box.clientWidth}; })
  .filter(t => t.width > t.box)"""


HIDDEN = """Array.from(document.querySelectorAll('td, th')).filter(c => !c.closest('#glossary') && c.closest('table')
  .offsetParent !== null && getComputedStyle(c).display === 'none').map(c => c.textContent)"""
HEADERS = """Array.from(new Set(Array.from(document.querySelectorAll('table.data thead th')).filter(th => th.offsetParent !== null)
  .map(th => th.textContent.replace(/\\s*\\?$/, '').replace(/\\s+/g, ' ').trim()))).sort()"""


def headers_in(page: Path) -> list[str]:
    """The distinct column headers of the page's sortable tables as written (before any script ran)."""
    from html.parser import HTMLParser

    class Headers(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: set[str] = set()
            self.path: list[str] = []
            self.text: list[str] | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "table":
                self.path.append("data" if "data" in (dict(attrs).get("class") or "").split() else "other")
            elif tag == "th" and self.path and self.path[-1] == "data":
                self.text = []

        def handle_endtag(self, tag: str) -> None:
            if tag == "table" and self.path:
                self.path.pop()
            elif tag == "th" and self.text is not None:
                self.found.add(re.sub(r"\s+", " ", "".join(self.text)).strip())
                self.text = None

        def handle_data(self, data: str) -> None:
            if self.text is not None:
                self.text.append(data)

    parser = Headers()
    parser.feed(page.read_text(encoding="utf-8"))
    return sorted(parser.found)


def every_page_kind(tmp_path: Path, fake_openrouter: Any) -> dict[str, Path]:
    """The comparison (audits and an epistemic run), an audit report, an epistemic report, the run
    index and a judge_check report (made by its real entrypoint against the loopback server)."""
    from audit.runs.__main__ import main as runs_main
    from tests.judge_check.test_judge_check import check, judge_handler, write_labels

    site = build_site(tmp_path)
    runs_main(["list", str(tmp_path / "sweep"), "--html", str(tmp_path / "runs.html")])
    fake_openrouter.handler = judge_handler
    done = check(tmp_path, fake_openrouter, str(write_labels(tmp_path / "labels.csv")))
    assert done.returncode == 0, done.stderr
    (out,) = (tmp_path / "out").iterdir()
    return {**site, "index": tmp_path / "runs.html", "judge_check": out / "judge_check.html",
            "benchmark": benchmark_page(tmp_path / "benchmark")}


def benchmark_page(out: Path) -> Path:
    """The benchmark comparison page over synthetic tables in the loader's columns (two models, two
    techniques, two framings, a reference model), a model name carrying the planted payload."""
    from audit.benchmark.cells import benchmark_tables
    from audit.compare.benchmark import PAGE, page_files
    from audit.io.atomic import write_texts
    from tests.benchmark.synthetic import tables

    responses, facts = tables()
    for frame in (responses, facts):
        frame.loc[frame["model"] == "m/b", "model"] = f"m/b {PAYLOAD}"
    write_texts(page_files(benchmark_tables(responses, facts), [out], out, 3))
    return out / PAGE


def test_every_page_kind_fits_1280_px_and_defines_its_headers(tmp_path: Path, fake_openrouter) -> None:
    """At 1,280 px no table is wider than its box and no cell is hidden: a table too wide is cut into
    column groups, each repeating the row's name (every column of the comparison, epistemic and
    benchmark pages is on the page); no console error, and every page has the glossary panel with each
    defined column header linked to its entry."""
    pages = every_page_kind(tmp_path, fake_openrouter)

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Chromium() as browser:
            for name, path in pages.items():
                page = await browser.page()
                await page.open(path, width=WIDTH)
                links = await page.js("Array.from(document.querySelectorAll('th a.def')).map(a => a.getAttribute('href'))")
                seen[name] = {
                    "too wide": await page.js(FITS),
                    "document": await page.js("document.documentElement.scrollWidth"),
                    "errors": list(page.errors),
                    "glossary": await page.js("document.querySelectorAll('#glossary dt').length"),
                    "links": len(links),
                    "dangling": [h for h in links if not await page.js(f"document.querySelector({json.dumps(h)}) !== null")],
                    "untitled": await page.js("Array.from(document.querySelectorAll('th a.def')).filter(a => !a.title).length"),
                }
                seen[name]["hidden"] = await page.js(HIDDEN)
                seen[name]["headers"] = await page.js(HEADERS)
                if name == "comparison":
                    seen[name]["heatmaps"] = await page.js(
                        "Array.from(document.querySelectorAll('.heatmaps:not(.gapgrids) figcaption'))"
                        ".map(c => c.textContent.trim())")
                    seen[name]["gap grids"] = await page.js(
                        "Array.from(document.querySelectorAll('.gapgrids figure')).map(f => ["
                        "f.querySelector('figcaption').textContent.trim(), "
                        "Array.from(f.querySelectorAll('td')).map(td => td.innerText.replace(/\\s+/g, ' ').trim())])")
                    seen[name]["epistemic legends"] = await page.js(
                        "Array.from(document.querySelectorAll('svg.chart')).filter(s => /^(AP|CVRR|FAR_NE|LA)/.test("
                        "s.getAttribute('aria-label'))).map(s => s.parentElement.querySelectorAll('.legend .key').length)")
                    seen[name]["cut labels"] = await page.js(
                        "Array.from(document.querySelectorAll('svg.chart')).filter(s => /^(AP|CVRR|FAR_NE|LA)/.test("
                        "s.getAttribute('aria-label'))).flatMap(s => Array.from(s.querySelectorAll('text')))"
                        ".filter(t => t.textContent.includes('…')).length")
        return seen

    seen = asyncio.run(scenario())
    for name, found in seen.items():
        assert found["too wide"] == [] and found["document"] <= WIDTH, (name, found)
        assert found["errors"] == [], (name, found["errors"])
        assert found["glossary"] > 0 and found["dangling"] == [] and found["untitled"] == 0, (name, found)
        assert found["hidden"] == [], (name, found["hidden"])  # nothing behind a toggle
    for name in ("comparison", "epistemic", "benchmark"):  # every column of every table is on the page
        assert seen[name]["headers"] == headers_in(pages[name]), name
    for name in ("comparison", "run", "epistemic", "index", "judge_check", "benchmark"):
        assert seen[name]["links"] > 0, name  # its column headers carry definitions
    assert seen["comparison"]["heatmaps"] == ["assistant", "assistant (baseline)", "user_persona"]
    # the knows-vs-says grid: model x topic per technique, each cell a signed gap with its interval and n
    ((technique, cells),) = seen["comparison"]["gap grids"]
    assert technique == "user_persona" and cells, seen["comparison"]["gap grids"]
    assert all(re.fullmatch(r"[+-]\d\.\d\d (\[-?\d\.\d\d, -?\d\.\d\d\] )?over \d+ paired runs?", c) for c in cells), cells
    assert seen["comparison"]["epistemic legends"] == [2, 2, 2, 2]  # a key per system under each chart
    assert seen["comparison"]["cut labels"] == 0  # the epistemic charts' labels are whole
