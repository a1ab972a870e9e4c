"""``python -m audit.rescore`` as a user runs it (a subprocess against the loopback server), on a
finished sweep: only judge requests are sent, the result goes beside each run, the run's own files
stay byte-identical, and a stopped rescore continues where it was."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from audit.testing.replies import chat_reply, error_reply
from audit.testing.server import FakeOpenRouter
from audit.judging.judge import classification_system
from audit.testing.scripted_audit import JUDGE, JUDGE_MODEL, Script, chat_role
from tests.censorship.panel_judges import JUDGE_A, JUDGE_B, JUDGE_C, PANEL, panel_handler
from tests.censorship.test_main import BASE, audit, finish
from tests import entrypoints

OTHER = "test/other-judge"
PANEL_JUDGING = "test_judge-a__test_judge-b__test_judge-c"
SWEEP = ["-m", "technique=user_persona,prefill", "judge=default", f"judge.model={JUDGE_MODEL}",
         *[a for a in BASE if not a.startswith(("output_dir", "judge=", "technique.with_baseline", "gateway.cache"))]]


def rescore(cwd: Path, server: FakeOpenRouter, *args: str, cold: bool = False) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
    proc = entrypoints.run([sys.executable, "-m", "audit.rescore", *args], cwd=cwd, env=env, text=True,
                           capture_output=True, timeout=120, cold=cold)
    return proc.returncode, proc.stdout, proc.stderr


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def other_judge(script: Script):
    """The script, with the other judge labelling the first probe's responses ``refused``."""
    def handler(request):
        body = request.json
        if request.endpoint == "chat" and body.get("model") == OTHER and "Probe 1:" in json.dumps(body["messages"]) \
                and body["messages"][0]["content"] == classification_system():  # a label, not facts nor a check
            return chat_reply(json.dumps({"label": "refused", "rationale": "declines"}))
        return script.handler(request)
    return handler


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished sweep every test here and in ``tests/compare/test_judgings.py`` rescores or compares,
    run once (a 2-job audit sweep with a judge, ~2.5 CPU-s, was run anew for each of those 7 tests until
    issue 40 cut the suite's cost). Each test gets a copy of its own (:func:`sweep`), so what one writes
    (its judgings, the labels another removes) no other test sees. Its cache root is its own: the
    session's fixtures come before each test's ``$AUDIT_CACHE_DIR``."""
    cwd = tmp_path_factory.mktemp("finished-sweep")
    with FakeOpenRouter(handler=Script(stop_at_turn=3).handler) as server:
        code, _, err = finish(audit(cwd, server, *SWEEP, f"cache.dir={cwd / 'cache'}"))
    assert code == 0, err
    (sweep_dir,) = (cwd / "multirun").iterdir()
    return sweep_dir


@pytest.fixture
def sweep(tmp_path, fake_openrouter, finished_sweep) -> Path:
    """A copy of the finished sweep where the test's own run would have put it, the server playing the
    other judge beside the script. (The sweep's own judge calls are not in the test's cache: none of
    these tests rescores with the sweep's judge, so what they send is the same.)"""
    sweep_dir = tmp_path / "multirun" / finished_sweep.name
    shutil.copytree(finished_sweep, sweep_dir, symlinks=True)
    fake_openrouter.handler = other_judge(Script(stop_at_turn=3))
    return sweep_dir


def test_rescoring_a_sweep_calls_only_the_judge_and_writes_beside_each_run(tmp_path, fake_openrouter, sweep):
    before = snapshot(sweep)
    code, out, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}", cold=True)  # on purpose
    assert code == 0, err
    requests = fake_openrouter.requests
    assert requests and all(r.endpoint == "chat" and r.json["model"] == OTHER and chat_role(r.json) == JUDGE
                            for r in requests)
    # 2 runs x 2 probes x (response + baseline) labels, and 2 runs x 2 fact scorings; the two runs'
    # assistant baselines are the same texts, so their 2 labels and 1 fact scoring come from the cache;
    # then the credit checks of the 4 facts claimed from the technique's responses (the same passage
    # after the same probe in both runs: asked once; the baselines' quotes are not found, so nothing to
    # check there)
    assert len(requests) == 2 * 2 * 2 + 2 * 2 - 3 + 4
    after = snapshot(sweep)
    assert {k: v for k, v in after.items() if "/judgings/" not in f"/{k}"} == before  # nothing original touched
    judgings = sorted(sweep.glob("*/*/judgings/test_other-judge/judging.json"))
    assert len(judgings) == 2 and out.count("judgings/test_other-judge") == 2 + 1  # each run, and the sweep
    for path in judgings:
        judging = json.loads(path.read_text())
        assert judging["judge"]["model"] == OTHER and judging["original_judge"] == JUDGE_MODEL
        assert [(r["response_label"], r["original_response_label"]) for r in judging["responses"]] == \
            [("refused", "deflected"), ("deflected", "deflected")]
        assert judging["classifications"] == {"deflected": 1, "refused": 1}
        assert judging["baseline_classifications"] == {"deflected": 1, "refused": 1}
        assert judging["fact_recall"]["total"] == 6 and judging["fact_recall"]["covered"] == 3
        assert judging["judge_failures"] == []
        usage = json.loads((path.parent / "usage.json").read_text())
        assert usage["totals"]["calls"] == 6 + 4 and {c["model"] for c in usage["calls"]} == {OTHER}  # + credit checks
        assert not (path.parent / "summary.json").exists()  # a judging is not a run of its own
        agreement = {r["kind"]: r for r in csv.DictReader((path.parent / "agreement.csv").open())}
        labels, facts = agreement["response labels"], agreement["fact verdicts"]
        # original: deflected, deflected; rescore: refused, deflected -> kappa 0 (all agreement is chance)
        assert (float(labels["kappa"]), labels["n"], labels["agreed"], labels["missing"]) == (0.0, "2", "1", "0")
        assert (float(facts["kappa"]), facts["n"], facts["agreed"]) == (1.0, "6", "6")  # the same fact judge script
        cells = {(c["kind"], c["original"], c["rescore"]): int(c["count"])
                 for c in csv.DictReader((path.parent / "confusion.csv").open())}
        assert cells[("response labels", "deflected", "refused")] == 1
        assert cells[("response labels", "deflected", "deflected")] == 1
    across = {r["kind"]: r for r in csv.DictReader((sweep / "judgings/test_other-judge/agreement.csv").open())}
    assert (across["response labels"]["n"], across["response labels"]["runs"], across["response labels"]["unit"]) \
        == ("4", "2", "runs")
    assert "response labels: kappa 0.00" in out and "across the 2 runs" in out
    # Again: everything from the journal, nothing sent, the same result.
    sent, first = len(fake_openrouter.requests), json.loads(judgings[0].read_text())
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}")
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent and json.loads(judgings[0].read_text()) == first


def test_a_stopped_rescore_continues_and_asks_only_what_is_missing(tmp_path, fake_openrouter, sweep):
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}", "gateway.cache.enabled=false")
    assert code == 0, err
    (folder, *_) = sorted(sweep.glob("*/*/judgings/test_other-judge"))
    result = json.loads((folder / "judging.json").read_text())
    journal = (folder / "judgments.jsonl").read_text().splitlines()
    (folder / "judgments.jsonl").write_text("\n".join(journal[:2]) + "\n" + journal[2][:20])  # killed mid-line
    (folder / "judging.json").unlink()
    fake_openrouter.reset()
    fake_openrouter.handler = other_judge(Script(stop_at_turn=3))
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}", "gateway.cache.enabled=false")
    assert code == 0, err
    # Only the cut run asks again, and not for its two journalled judgments; the other run is done.
    # Its fact scoring is asked again with the 4 credit checks of the facts it claims.
    assert len(fake_openrouter.requests) == 6 - 2 + 4
    assert json.loads((folder / "judging.json").read_text())["responses"] == result["responses"]
    # both invocations' calls: (6 judgments + 4 credit checks), then (4 + the 4 checks again)
    assert json.loads((folder / "usage.json").read_text())["totals"]["calls"] == (6 + 4) + (4 + 4)


def test_other_judge_settings_in_the_same_judging_dir_are_refused(tmp_path, fake_openrouter, sweep):
    assert rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}")[0] == 0
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}", "judge.temperature=0.7")
    assert code == 1 and "judging=<another name>" in err and err.count("\n") == 1


def test_no_runs_is_one_line(tmp_path, fake_openrouter):
    code, _, err = rescore(tmp_path, fake_openrouter, str(tmp_path))
    assert code == 1 and "no runs found" in err and err.count("\n") == 1


def test_a_judge_that_fails_every_call_exits_1_and_the_run_is_untouched(tmp_path, fake_openrouter, sweep):
    before = snapshot(sweep)
    fake_openrouter.handler = lambda request: error_reply(404, "no such model")
    code, out, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}", "gateway.max_retries=0")
    assert code == 1 and "the judge failed on every item" in err and err.count("\n") == 1
    assert "4 judge failure(s)" in out or "6 judge failure(s)" in out
    assert {k: v for k, v in snapshot(sweep).items() if "judgings/" not in k} == before
    # the failures are recorded and asked again next time
    fake_openrouter.handler = other_judge(Script(stop_at_turn=3))
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}")
    assert code == 0, err


def test_rescoring_with_a_panel_keeps_each_member_and_the_panels_agreement(tmp_path, fake_openrouter, sweep):
    fake_openrouter.handler = panel_handler(Script(stop_at_turn=3))
    code, out, err = rescore(tmp_path, fake_openrouter, str(sweep), PANEL)
    assert code == 0, err
    assert {r.json["model"] for r in fake_openrouter.requests} == {JUDGE_A, JUDGE_B, JUDGE_C}
    judgings = sorted(sweep.glob(f"*/*/judgings/{PANEL_JUDGING}/judging.json"))
    assert len(judgings) == 2
    for path in judgings:
        judging = json.loads(path.read_text())
        assert [m["name"] for m in judging["judge"]["members"]] == [JUDGE_A, JUDGE_B, JUDGE_C]
        rows = judging["responses"]
        assert [r["response_label"] for r in rows] == ["disputed", "deflected"]
        assert rows[0]["response_members"] == {JUDGE_A: ["deflected"], JUDGE_B: ["refused"], JUDGE_C: ["partial"]}
        assert judging["classifications"] == {"deflected": 1, "disputed": 1}
        panel = judging["judge_panel"]
        assert panel["kinds"]["response labels"]["outcomes"] == {"majority": 1, "disputed": 1, "failed": 0}
        assert panel["disputed"] == {"response labels": 1, "baseline labels": 1, "fact verdicts": 0,
                                     "baseline fact verdicts": 0}
        pairs = {tuple(p["members"]): p for p in panel["kinds"]["response labels"]["pairs"]}
        assert pairs[(JUDGE_B, JUDGE_C)]["value"] == pytest.approx(-1 / 3) and pairs[(JUDGE_B, JUDGE_C)]["n"] == 2
        agreement = {r["kind"]: r for r in csv.DictReader((path.parent / "agreement.csv").open())}
        assert agreement["response labels"]["agreed"] == "1"  # original deflected, deflected
    across = json.loads((sweep / "judgings" / PANEL_JUDGING / "judge_panel.json").read_text())
    labels = across["kinds"]["response labels"]
    assert labels["outcomes"] == {"majority": 2, "disputed": 2, "failed": 0} and labels["alpha"]["unit"] == "runs"
    assert labels["alpha"]["runs"] == 2 and across["member_failures"] == {JUDGE_A: {}, JUDGE_B: {}, JUDGE_C: {}}
    assert "panel across the runs: response labels alpha" in out
    # again: all from the journal
    sent = len(fake_openrouter.requests)
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), PANEL)
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent


def test_original_is_the_audits_own_judging_and_no_rescore_may_take_its_name() -> None:
    from omegaconf import OmegaConf

    from audit.errors import UserError
    from audit.rescore.rescore import judging_name

    with pytest.raises(UserError, match="judging=original names the audit's own judging"):
        judging_name(OmegaConf.create({"judging": "original"}), None)  # type: ignore[arg-type]
