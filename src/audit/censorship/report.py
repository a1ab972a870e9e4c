"""The per-run HTML report: one self-contained file a reader can open offline.

Reads only the run directory (``config.yaml``, ``summary.json``, ``auditor_turns/``,
``audited_responses/``), so it works for finished, failed and killed runs alike (a run with no
``summary.json`` yet is shown as incomplete and its hypothesis history is replayed from the
turns). Every model-produced string is untrusted: the template autoescapes everything and
nothing is marked safe; the confidence timeline is inline SVG computed here.

Regenerate a report by hand (e.g. after a crash): ``python -m audit.censorship.report RUN_DIR``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from omegaconf import OmegaConf

from audit.censorship.conversations import Tree
from audit.censorship.evidence import citation_counts
from audit.censorship.hypotheses import HypothesisLedger
from audit.censorship.provenance import UNNAMED
from audit.censorship.schema import CONFIDENCES, is_known_strategy
from audit.cli import ArgParser
from audit.counted import counted
from audit.errors import UserError, exit_on_user_error
from audit.io.atomic import write_texts
from audit.judging.counting import run_unknown_labels
from audit.judging.labels import labels
from audit.llm import embedded
from audit.pages import SORT_FILTER_JS, environment
from audit.pages.paging import MORE_JS, Paged, page_entries
from audit.censorship import terms as censorship_terms
from audit.judging import terms as judging_terms
from audit.pages.glossary import COMMON, Glossary
from audit.pages.tools import PAGE_PANEL, page_js
from audit.record.draws import run_draws
from audit.record.summary import CENSORSHIP, SUMMARY, CensorshipSummary, read_summary
from audit.stats.intervals import PALETTE
from audit.io.safe_read import load_yaml, read_json

GLOSSARY = Glossary(judging_terms.TERMS, censorship_terms.TERMS, COMMON)
"""The run page's glossary: the judging's terms, the audit's and every run's."""

REPORT = "report.html"
STOPPED = {"auditor": "ended by the auditor", "max_iterations": "stopped at max iterations",
           "auditor_unusable": "ended early: the auditor gave no usable reply after its re-asks, "
                               "so it concluded on the iterations it had",
           "budget": "stopped by the budget", "interrupted": "interrupted"}
"""How the report words a run's stop reason (:data:`audit.record.status.StopReason`)."""
CHART = {"width": 760, "left": 70, "right": 60, "top": 16, "row": 46}


def page_environment() -> jinja2.Environment:
    """This report's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(Path(__file__).resolve().parent / "templates", lenient=True)


def _read_numbered(folder: Path, problems: list[str]) -> dict[int, dict[str, Any]]:
    """``NNN.json`` files by number; unreadable ones are reported, not fatal."""
    records: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob("[0-9][0-9][0-9]*.json")):
        if not path.stem.isdigit():
            continue
        try:
            records[int(path.stem)] = read_json(path)
        except (OSError, ValueError) as exc:
            problems.append(f"{folder.name}/{path.name} unreadable: {exc}")
    return records


def load_run(run_dir: Path) -> dict[str, Any]:
    """Everything the report shows, from the run directory alone."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"run directory {run_dir} does not exist; pass the directory of one audit run")
    problems: list[str] = []
    config: dict[str, Any] = {}
    if (run_dir / "config.yaml").exists():
        try:
            config = OmegaConf.to_container(load_yaml(run_dir / "config.yaml"), resolve=False)  # type: ignore[assignment]
        except Exception as exc:  # a broken config must not hide the transcript
            problems.append(f"config.yaml unreadable: {exc}")
    summary: CensorshipSummary | None = None
    if (run_dir / SUMMARY).exists():
        try:
            read = read_summary(run_dir / SUMMARY, CENSORSHIP)
        except ValueError as exc:
            problems.append(f"summary.json unreadable: {exc}")
        else:
            if isinstance(read, CensorshipSummary):
                summary = read
            else:
                problems.append(f"summary.json is the summary of an {read.experiment} run")
    turns = _read_numbered(run_dir / "auditor_turns", problems)
    responses = _read_numbered(run_dir / "audited_responses", problems)
    if not (config or summary or turns or responses):
        raise UserError(f"{run_dir} holds no audit run (no config.yaml, summary.json or auditor_turns/)")
    return {"dir": run_dir, "config": config, "summary": summary, "has_summary": summary is not None,
            "turns": turns, "responses": responses, "problems": problems}


def _parsed(turn: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((turn or {}).get("parsed") or {})


def _history(run: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The summary's ledger history, or (partial run) one replayed from the saved turns."""
    history = run["summary"].hypothesis_history if run["summary"] is not None else None
    if isinstance(history, dict) and history:
        return history
    turns = [(k, _parsed(t).get("hypotheses") or []) for k, t in sorted(run["turns"].items()) if _parsed(t)]
    try:
        return HypothesisLedger.replay(turns).history()
    except (ValueError, KeyError, TypeError):
        return {}


def timeline(history: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, Any] | None:
    """Coordinates for the inline-SVG confidence chart: one line per hypothesis id.

    A line breaks where the hypothesis was absent (dropped, or not yet added); ids at the same
    level are nudged apart vertically so overlapping lines stay visible.
    """
    iterations = sorted({s["iteration"] for snaps in history.values() for s in snaps if isinstance(s.get("iteration"), int)})
    if not iterations:
        return None
    first, last = iterations[0], iterations[-1]
    plot_w = CHART["width"] - CHART["left"] - CHART["right"]
    height = CHART["top"] * 2 + CHART["row"] * (len(CONFIDENCES) - 1) + 24

    def x(iteration: int) -> float:
        return CHART["left"] + (plot_w * (iteration - first) / (last - first) if last > first else plot_w / 2)

    def y(level: int, k: int) -> float:
        return CHART["top"] + CHART["row"] * (len(CONFIDENCES) - 1 - level) + ((k % 5) - 2) * 3

    series = []
    for k, (hyp_id, snaps) in enumerate(history.items()):
        segments: list[list[dict[str, Any]]] = [[]]
        for snap in sorted(snaps, key=lambda s: s.get("iteration") or 0):
            if snap.get("confidence") not in CONFIDENCES:
                segments.append([])
                continue
            segments[-1].append({
                "x": round(x(snap["iteration"]), 1),
                "y": round(y(CONFIDENCES.index(snap["confidence"]), k), 1),
                "title": f"{hyp_id}, turn {snap['iteration']}: {snap['confidence']} ({snap.get('status')}) {snap.get('hypothesis') or ''}",
            })
        segments = [s for s in segments if s]
        if segments:
            series.append({
                "id": hyp_id,
                "color": PALETTE[k % len(PALETTE)],
                "polylines": [" ".join(f"{p['x']},{p['y']}" for p in s) for s in segments],
                "dots": [p for s in segments for p in s],
                "end": segments[-1][-1],
            })
    ticks = iterations if len(iterations) <= 25 else iterations[:: max(1, len(iterations) // 20)]
    return {
        "width": CHART["width"], "height": height, "left": CHART["left"], "right": CHART["width"] - CHART["right"],
        "levels": [{"name": name, "y": y(i, 2)} for i, name in enumerate(CONFIDENCES)],
        "ticks": [{"label": t, "x": round(x(t), 1)} for t in ticks], "axis_y": height - 18, "series": series,
    }


def _transcript(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Chronological entries: turn 1, response 1, turn 2 (analyses response 1), ..."""
    entries: list[dict[str, Any]] = []
    numbers = sorted(set(run["turns"]) | set(run["responses"]))
    for n in numbers:
        if n in run["turns"]:
            turn = run["turns"][n]
            parsed = _parsed(turn)
            entries.append({"kind": "turn", "n": n, "turn": turn, "parsed": parsed,
                            "known_strategy": is_known_strategy(parsed.get("prompt_strategy"))})
        if n in run["responses"]:
            entries.append({"kind": "response", "n": n, "response": run["responses"][n]})
    return entries


def conversations(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``technique=auto``: every conversation as threads, one per branch (the turns from its start to
    the branch's last draw, each with the draw, its action and technique), the active branch marked."""
    tree = Tree.of(d for d in run_draws(r for _, r in sorted(run["responses"].items())) if d.auto)
    out = []
    for conversation, ids in tree.conversations.items():
        active = tree.active_branch(conversation)
        branches = []
        for branch in tree.branches(conversation):
            own = [d for d in ids if tree.draws[d].branch == branch]
            tip = own[-1]
            turns = [{"n": n, "draw": d, "role": m["role"], "text": m["content"],
                      "action": tree.draws[d].action, "technique": tree.draws[d].technique}
                     for n, (d, m) in enumerate(tree.thread(tip), start=1)]
            # where the branch leaves its conversation: after the parent of its first draw (None: the start)
            branches.append({"id": branch, "active": branch == active, "turns": turns,
                             "forks_after": tree.draws[own[0]].parent})
        out.append({"id": conversation, "branches": branches, "context": tree.context(conversation)})
    return out


def embedded_roles(config: Mapping[str, Any]) -> list[str]:
    """The roles the embedded 135M model played (``local=``): a reader must know its numbers are
    a test of the pipeline, not findings about a model."""
    return [role for role in ("auditor", "audited", "judge")
            if isinstance(config.get(role), Mapping) and config[role].get("endpoint") == embedded.ENDPOINT]


def served_by(summary: CensorshipSummary | None) -> str:
    """Who served the target's answered draws, as the page says it: ``DeepInfra (3 draws), a provider
    its reply did not name (1 draw)`` ('' when the run recorded none)."""
    served = getattr(summary, "served", None)
    providers = served.get("providers") if isinstance(served, Mapping) else None
    if not isinstance(providers, Mapping):
        return ""
    return ", ".join(f"{'a provider its reply did not name' if name == UNNAMED else name} ({counted(int(n), 'draw')})"
                     for name, n in providers.items())


def report_context(run: Mapping[str, Any]) -> dict[str, Any]:
    """The template's variables (kept separate so tests can check them without HTML)."""
    summary: CensorshipSummary | None = run["summary"]
    config = (summary.config if summary is not None else None) or run["config"]
    last_turn = run["turns"][max(run["turns"])] if run["turns"] else None
    final_hypotheses = summary.final_hypotheses if summary is not None else _parsed(last_turn).get("hypotheses") or []
    history = _history(run)
    final_ids = {str(h.get("id")) for h in final_hypotheses}
    dropped = [{"id": hyp_id, "last": next((s for s in reversed(snaps) if s.get("confidence")), {}),
                "at": snaps[-1].get("iteration")} for hyp_id, snaps in history.items() if hyp_id not in final_ids]
    status = summary.status.value if summary is not None else "incomplete"
    return {
        "run": run,
        "name": Path(run["dir"]).name,
        "config": config,
        "summary": summary if summary is not None else {},
        "status": status,
        "stopped": STOPPED.get(summary.stop_reason or "") if summary is not None else None,
        "totals": summary.totals if summary is not None else {},
        "evidence": (summary.evidence if summary is not None else None) or citation_counts(final_hypotheses),
        "classifications": summary.classifications if summary is not None else {},
        "baseline_classifications": (summary.baseline_classifications if summary is not None else None) or {},
        # labels the vocabulary lacks (a hand-edited or older file): named, and counted by no reader
        "unknown_labels": {} if summary is None else run_unknown_labels(summary),
        "fact_recall": summary.fact_recall if summary is not None else None,
        "baseline_fact_recall": summary.baseline_fact_recall if summary is not None else None,
        "fact_scoring": summary.fact_scoring if summary is not None else None,
        "served_by": served_by(summary),
        "embedded_roles": embedded_roles(config),
        "embedded_model": embedded.MODEL,
        # "judge off" only when the config says so: an errored run may have classified nothing yet.
        "judge_on": bool((config.get("judge") or {}).get("enabled")),
        "final_summary": (summary.final_summary if summary is not None else None)
        or _parsed(last_turn).get("final_summary"),
        "final_hypotheses": final_hypotheses,
        "dropped": dropped,
        "chart": timeline(history),
        **_paged_transcript(_transcript(run)),
        "conversations": conversations(run),
        "problems": run["problems"],
        "labels": labels(),  # their colours
        "sort_filter_js": SORT_FILTER_JS, "page_js": page_js(GLOSSARY), "page_panel": PAGE_PANEL,
    }


INLINE_ENTRIES = 400
"""Transcript entries (turns and responses) laid out when the page opens; the rest are written
beside it in :data:`ENTRIES_DIR`, :data:`CHUNK_ENTRIES` to a file, loaded when the reader asks
(:mod:`audit.pages.paging`), so a run of thousands of iterations opens as fast as a short one."""
CHUNK_ENTRIES = 400
ENTRIES_DIR = "report_entries"


def _paged_transcript(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Every entry drawn by the one entry macro, paged: the first ones for the page, the rest for files beside it."""
    entry = page_environment().get_template("entry.html.j2").module.entry  # type: ignore[attr-defined]
    return {"transcript": entries, "paged": page_entries([entry(e) for e in entries], shown=INLINE_ENTRIES, chunk=CHUNK_ENTRIES,
                                  folder=ENTRIES_DIR),
            "box": "transcript", "noun": "entries", "more_js": Markup(MORE_JS)}


def render_report(run_dir: Path) -> str:
    """The report HTML for ``run_dir`` (entries past :data:`INLINE_ENTRIES` go in files beside it: :func:`write_report`)."""
    return page_environment().get_template("report.html.j2").render(**report_context(load_run(run_dir)))


def write_report(run_dir: Path) -> Path:
    """Write ``report.html`` into ``run_dir``, with the transcript's later entries beside it, as one set."""
    context = report_context(load_run(Path(run_dir)))
    page = Path(run_dir) / REPORT
    paged: Paged = context["paged"]
    write_texts({page: page_environment().get_template("report.html.j2").render(**context), **paged.files(page)})
    return page


def main(argv: list[str] | None = None) -> None:
    """``python -m audit.censorship.report RUN_DIR``: (re)write a run's report."""
    parser = ArgParser(prog="python -m audit.censorship.report",
                     description="Rewrite an audit run's report.html from the files the run saved (no model call). "
                                 "A run writes its report itself; this is for rebuilding one.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="an audit run dir (outputs/search_censored/...)")
    print(write_report(parser.parse_args(argv).run_dir))


if __name__ == "__main__":
    exit_on_user_error(main)
