"""The response labels have one definition (``judging/labels.yaml``): the judge's instructions,
the reply's JSON Schema, the validator, the counts and the pages all read it, so a label is added by
adding one entry there."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from audit.errors import UserError
from audit.judging import labels
from audit.judging.counting import LABELS
from audit.judging.judge import CLASSES, CLASSIFICATION_FORMAT, classification_system, parse_classification
from audit.judging.majority import DISPUTED
from audit.compare.terms import GLOSSARY

SHIPPED = ("refused", "deflected", "official_line", "partial", "forthcoming")
"""In this order in the judge's instructions (the bytes of every judge request); a label added goes in any place."""


def test_every_reader_of_labels_reads_the_one_definition():
    assert CLASSES == labels.names()
    assert [c for c in CLASSES if c in SHIPPED] == list(SHIPPED)
    schema = CLASSIFICATION_FORMAT["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == list(CLASSES)
    assert LABELS == (*CLASSES, DISPUTED)
    system = classification_system()
    for label in labels.labels():
        assert f"- {label.name}: {label.judge}\n" in system + "\n"
        assert parse_classification(f'{{"label": "{label.name}", "rationale": "r"}}')["label"] == label.name
        jsonschema.validate({"label": label.name, "rationale": "r"}, schema)
        assert any(t.name == f"{label.name} share" and label.glossary in t.definition for t in GLOSSARY.all_terms())
    assert f'"label": "{"|".join(CLASSES)}"' in system
    assert parse_classification('{"label": "Deflection"}')["label"] == "deflected"  # an alias of the file's


def with_labels_file(tmp_path: Path, text: str, check: str, *, timeout: int = 120) -> None:
    """Run ``check`` in a fresh interpreter (the labels are read once per process) whose label file
    is ``text``, from the repository root (so a check can import the tests' helpers)."""
    path = tmp_path / "labels.yaml"
    path.write_text(text, encoding="utf-8")
    code = (f"from pathlib import Path\nimport audit.judging.labels as labels\n"
            f"labels.LABELS_FILE = Path({str(path)!r})\n" + textwrap.dedent(check))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_label_added_to_the_file_reaches_the_judge_the_schema_the_validator_and_the_counts(tmp_path):
    """The contributor guide's claim, checked: one new entry, nothing else edited (a fresh interpreter,
    since the labels are read once)."""
    with_labels_file(tmp_path, labels.LABELS_FILE.read_text(encoding="utf-8") + textwrap.dedent("""\
        - name: zz_added_label
          judge: answers by pointing at another country's record instead of the question.
          glossary: answers with another country's record instead
          colour: "#444444"
          aliases: [zz_alias]
        """), """\
        from audit.judging.counting import LABELS
        from audit.judging.judge import CLASSIFICATION_FORMAT, classification_system, parse_classification
        from audit.judging.terms import TERMS
        assert "zz_added_label" in CLASSIFICATION_FORMAT["json_schema"]["schema"]["properties"]["label"]["enum"]
        assert "- zz_added_label: answers by pointing" in classification_system()
        assert '|zz_added_label", "rationale"' in classification_system()
        assert parse_classification('{"label": "zz_alias"}')["label"] == "zz_added_label"
        assert "zz_added_label" in LABELS
        assert any(term.name == "zz_added_label share" for _, term in TERMS.entries)
        """)


def test_which_shares_are_headline_columns_is_the_file_s_headline_field(tmp_path):
    """``headline:`` marks a headline share: the shipped file's two (in its order), and an entry added with
    one reaches the comparison's map and gap columns, its printed gaps, the benchmark's rates and gaps and
    their page names, with no code edited (a fresh interpreter, since the labels are read once)."""
    assert [(x.name, x.headline, x.metric) for x in labels.headlines()] == \
        [("refused", "refusal", "refusal"), ("official_line", "official-line", "official_line")]
    with_labels_file(tmp_path, labels.LABELS_FILE.read_text(encoding="utf-8") + textwrap.dedent("""\
        - name: zz_whatabout
          judge: answers by pointing at another country's record instead of the question.
          glossary: answers with another country's record instead
          colour: "#444444"
          headline: whatabout-ism
        """), """\
        from audit.benchmark.cells import BY_NAME, GAP_METRICS
        from audit.compare.benchmark import CELL_RATES
        from audit.compare.report import GAP_PRINT
        from audit.compare.tables import GAP_COLUMNS, HEADLINE, MAP_COLUMNS
        from audit.benchmark.terms import GAP_RATE_NAMES
        assert HEADLINE == ("refused", "official_line", "zz_whatabout"), HEADLINE
        assert {"zz_whatabout", "zz_whatabout_share_lo", "zz_whatabout_share_hi"} <= set(MAP_COLUMNS)
        assert "zz_whatabout_gap_hi" in GAP_COLUMNS and "zz_whatabout_gap" in GAP_PRINT
        assert GAP_METRICS[:3] == ("refusal", "official_line", "whatabout_ism") and "whatabout_ism" in BY_NAME
        assert CELL_RATES["whatabout_ism"] == "whatabout-ism share" and "whatabout-ism" in GAP_RATE_NAMES
        """)


def test_a_headline_label_renamed_in_the_file_needs_no_code_change(tmp_path):
    """``refused`` renamed ``declined`` in the file alone (its headline kept): a whole comparison of
    runs judged with the new name counts it in the map, its spread, the gaps and the printed tables
    and renders its page (a fresh interpreter, since the labels are read once)."""
    renamed = labels.LABELS_FILE.read_text(encoding="utf-8").replace("- name: refused", "- name: declined") \
        .replace("[refusal, refuse]", "[refusal, refuse, refused]")
    with_labels_file(tmp_path, renamed, f"""\
        from pathlib import Path
        import pandas as pd
        from audit.compare.build import compare
        from tests.compare.fake_runs import censorship_run
        runs = Path({str(tmp_path / "runs")!r})
        censorship_run(runs, "a", classifications={{"declined": 1, "forthcoming": 3}}, baseline={{"declined": 4}})
        censorship_run(runs, "b", classifications={{"declined": 3, "forthcoming": 1}}, baseline={{"declined": 4}})
        compare([runs])
        cell = pd.read_csv(runs / "censorship_map.csv").set_index("technique").loc["user_persona"]
        assert (cell["declined"], cell["declined_share"]) == (4, 0.5), cell
        assert (cell["declined_min"], cell["declined_max"]) == (0.25, 0.75)
        gaps = pd.read_csv(runs / "knows_vs_says.csv")
        assert list(gaps["declined_gap"]) == [-0.5], gaps
        assert "refused" not in "".join(pd.read_csv(runs / "censorship_map.csv").columns)
        page = (runs / "comparison.html").read_text(encoding="utf-8")
        assert "declined share" in page and "refusal gap" in page
        """, timeout=300)


@pytest.mark.parametrize("data, says", [
    ([], "expected a list of labels"),
    ([{"name": "refused", "judge": "x", "glossary": "y"}], "label refused needs a non-empty colour"),
    ([{"name": "a", "judge": "x", "glossary": "y", "colour": "#000", "aliases": "b"}], "aliases must be a list"),
    ([{"name": "a", "judge": "x", "glossary": "y", "colour": "#000"}] * 2, "label a is named twice"),
    ([{"name": "a", "judge": "x", "glossary": "y", "colour": "#000", "headline": True}], "headline must name its share"),
])
def test_a_malformed_entry_is_one_line_naming_it(data, says):
    with pytest.raises(UserError) as info:
        labels.parse_labels(data, Path("labels.yaml"))
    assert says in str(info.value) and "\n" not in str(info.value)
