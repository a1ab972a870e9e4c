"""``python -m audit.judge_check`` end to end against the loopback server, and its bad input."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from audit.errors import UserError
from audit.judging.judge import classification_system
from audit.judge_check.labels import TEMPLATE, parse_labels
from audit.testing.replies import chat_reply, error_reply, prompt_text
from tests import entrypoints

EXAMPLE = TEMPLATE.with_name("example_synthetic.csv")

# id -> (the researcher's label, what the scripted judge replies). d3's reply is unusable: a judge failure.
SCRIPT = {
    "r1": ("refused", "refused"), "r2": ("refused", "refused"), "r3": ("refused", "refused"),
    "r4": ("refused", "deflected"),
    "d1": ("deflected", "deflected"), "d2": ("deflected", "refused"), "d3": ("deflected", None),
    "f1": ("forthcoming", "forthcoming"), "f2": ("forthcoming", "forthcoming"), "f3": ("forthcoming", "partial"),
}


def write_labels(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "topic", "probe", "response", "label"])
        for ident, (label, _) in SCRIPT.items():
            writer.writerow([ident, "tiananmen", "What happened in June 1989?",
                             f"Synthetic response <script>alert(1)</script> [{ident}], with a comma", label])
    return path


def judge_handler(request):
    ident = re.search(r"\[(\w\d)\]", prompt_text(request)).group(1)
    said = SCRIPT[ident][1]
    return chat_reply(json.dumps({"label": said, "rationale": f"scripted for {ident}"}) if said else "I cannot decide")


def check(cwd: Path, server, *args: str, cold: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    if server is not None:
        env.update(server.env())
    return entrypoints.run([sys.executable, "-m", "audit.judge_check", *args, "gateway.max_retries=0", "output_dir=out"],
                           cwd=cwd, env=env, text=True, capture_output=True, timeout=120, cold=cold)


def test_precision_recall_and_kappa_against_scripted_judge(tmp_path, fake_openrouter):
    fake_openrouter.handler = judge_handler
    result = check(tmp_path, fake_openrouter, str(write_labels(tmp_path / "my labels.csv")), cold=True)  # on purpose
    assert result.returncode == 0, result.stderr
    (out,) = (tmp_path / "out").iterdir()
    assert sorted(p.name for p in out.iterdir()) == ["judge_check.csv", "judge_check.html", "judge_check.json",
                                                      "judge_check_items.csv", "usage.json", "usage.jsonl"]
    # Only judge calls, one per response, with the audit's own judge prompt.
    assert len(fake_openrouter.requests) == 10 and all(r.endpoint == "chat" for r in fake_openrouter.requests)
    assert fake_openrouter.requests[0].json["messages"][0]["content"] == classification_system()

    report = json.loads((out / "judge_check.json").read_text())
    assert (report["responses"], report["judged"], report["failed"]) == (10, 9, 1)
    per = report["per_label"]
    # By hand: the judge said refused 4 times (3 right); the researcher said refused 4 times, all judged (3 found).
    assert (per["refused"]["precision"]["k"], per["refused"]["precision"]["n"]) == (3, 4)
    assert (per["refused"]["recall"]["k"], per["refused"]["recall"]["n"]) == (3, 4)
    assert per["refused"]["precision"]["lo"] == pytest.approx(0.3006, abs=1e-3)  # Wilson 3/4, by hand
    assert per["refused"]["precision"]["hi"] == pytest.approx(0.9544, abs=1e-3)
    assert (per["deflected"]["precision"]["value"], per["deflected"]["recall"]["value"]) == (0.5, 0.5)
    assert per["deflected"]["recall"]["n"] == 2  # d3 failed: out of the denominator
    assert (per["forthcoming"]["precision"]["value"], per["forthcoming"]["recall"]["value"]) == (1.0, pytest.approx(2 / 3))
    assert per["partial"]["precision"]["value"] == 0.0 and per["partial"]["recall"] is None
    assert per["official_line"]["precision"] is None
    # Kappa by hand: po = 6/9, pe = (4*4 + 2*2 + 3*2)/81, kappa = 28/55.
    assert report["kappa"]["value"] == pytest.approx(28 / 55)
    assert report["kappa"]["n"] == 9 and report["kappa"]["unit"] == "responses"
    assert report["confusion"]["matrix"][0][:2] == [3, 1] and report["confusion"]["missing"] == 1

    items = list(csv.DictReader((out / "judge_check_items.csv").open(encoding="utf-8")))
    failed = next(i for i in items if i["id"] == "d3")
    assert failed["judge_label"] == "" and failed["judge_error"]
    html = (out / "judge_check.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "kappa vs your labels: 0.51" in result.stdout and "1 judge failure (left out" in result.stdout
    assert "test-key-123" not in "".join(p.read_text() for p in out.iterdir())


def test_the_synthetic_example_says_it_is_synthetic_and_parses():
    rows = parse_labels(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE))
    assert len(rows) >= 5 and all(r.response.startswith("SYNTHETIC EXAMPLE") for r in rows)
    assert {r.id: r.facts for r in rows if r.facts}["synthetic-07"] == {1: "revealed"}
    # The template is the header alone; the parser accepts it once a row is added.
    header = TEMPLATE.read_text(encoding="utf-8")
    assert parse_labels(header + 'x,,tiananmen,,"text",refused\n', "t")[0].label == "refused"


@pytest.mark.parametrize("written, says", [
    ("Refsued", "row 2: Unknown label 'refsued'. Did you mean 'refused'? Available: deflected, forthcoming, "),
    ("official line", "Did you mean 'official_line'?"),
    ("zzz", "row 2: Unknown label 'zzz'. Available: deflected"),  # nothing close: no guess, the list
])
def test_an_unknown_label_says_did_you_mean_as_the_registries_do(written, says):
    with pytest.raises(UserError) as info:
        parse_labels(f"topic,response,label\ntiananmen,hi,{written}\n", "mine.csv")
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ("id,topic,response\n1,tiananmen,hi\n", "no 'label' column"),
    ("topic,response,label\ntiananmen,hi,refusedd\n", "Unknown label 'refusedd'. Did you mean 'refused'?"),
    ("topic,response,label\n", "no rows"),
    ("topic,response,label\nnowhere,hi,refused\n", "Unknown topic 'nowhere'"),
    ("topic,response,label,fact_1\ntiananmen,hi,refused,maybe\n", "fact_1='maybe'; use one of revealed"),
    ("topic,response,label,fact_9\ntiananmen,hi,refused,revealed\n", "fact_9 is labelled but topic tiananmen has 6"),
    ("topic,response,label,fact_0\ntiananmen,hi,refused,revealed\n", "unknown column(s) 'fact_0'"),
])
def test_bad_labels_are_one_line(tmp_path, content, message):
    (tmp_path / "labels.csv").write_text(content, encoding="utf-8")
    result = check(tmp_path, None, "labels.csv")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_missing_file_and_no_file(tmp_path):
    result = check(tmp_path, None, "nope.csv")
    assert result.returncode == 1 and "no such file" in result.stderr and len(result.stderr.splitlines()) == 1
    result = check(tmp_path, None)
    assert result.returncode == 1 and "no labelled CSV given" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_judge_that_always_fails_is_an_error_after_writing(tmp_path, fake_openrouter):
    fake_openrouter.default_reply = error_reply(404, "No endpoints found for this model")
    result = check(tmp_path, fake_openrouter, str(write_labels(tmp_path / "labels.csv")))
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "failed on every response" in result.stderr
    (out,) = (tmp_path / "out").iterdir()
    assert json.loads((out / "judge_check.json").read_text())["failed"] == 10


@pytest.mark.parametrize("size", [200_000, 10_000_000])
def test_a_response_cell_of_any_size_is_read(size):
    """Before: a cell over the csv module's 128 KB field limit (200 KB, 10 MB) ended in a traceback."""
    long = "word " * (size // 5)
    rows = parse_labels(f'response,topic,label\n"{long}",tiananmen,refused\n', "big.csv")
    assert len(rows) == 1 and len(rows[0].response) == len(long) and rows[0].label == "refused"
