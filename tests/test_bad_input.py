"""The bad-input corpus: every entrypoint, run as a user runs it, given input it must refuse.

Each case is one subprocess (``python -m audit``, ``audit.epistemic``, ``audit.compare``,
``audit.doctor``) and must end the same way: exit 1, exactly one line on stderr that names
the problem (``says``), no traceback anywhere, and nothing half-written: every file that was
there before is byte-for-byte the same, and any ``summary.json`` the case wrote says
``error`` (never ``running`` or a finished status) and counts the iterations on disk.

The cases run concurrently (a few at a time) the first time any of them is asked for, so
the whole corpus takes seconds; each test then checks its own case's outcome. Most fail
before any model call; the rest talk to one loopback server (the scripted audit).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from audit.testing.replies import Reply, TEST_API_KEY, chat_reply, encoded_key_echo, error_reply, nested_json
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from tests import entrypoints
from tests.limits import limit_child
from tests.timing import scaled

AUDIT, EPISTEMIC, COMPARE, DOCTOR = "audit", "audit.epistemic", "audit.compare", "audit.doctor"
FAST = (f"auditor.model={AUDITOR_MODEL}", "judge=off", "gateway.max_retries=0", "gateway.cache.enabled=false",
        "max_iterations=5", "output_dir=out")
"""A scripted audit against the loopback server (used where a case needs to get as far as a model call)."""
MISSING_MODEL = "nope/no-such-model"
HOSTILE = {
    "test/echoes-key": encoded_key_echo("json_escaped_dash"),  # the key JSON-escaped in a 401
    "test/deep-json": lambda request: chat_reply(nested_json()),  # every reply nested 5,000 deep
    "test/escapes": lambda request: error_reply(401, "bad key\x1b]0;pwned\x07\x1b[2J\x1b[1;1H"),
    "test/revoked": lambda request: error_reply(401, "key revoked"),
}
"""Models the loopback server answers with hostile replies, by name."""
FINISHED = {"success", "started", "cancelled"}
AS_ROOT = os.geteuid() == 0
"""As root, the read-only cases run without the capabilities that ignore file permissions."""


@dataclass(frozen=True)
class Case:
    """One bad input: what to run (``{dir}`` is the case's own directory, also its cwd), what the
    one line must name, and how to prepare the directory first."""

    id: str
    module: str
    args: tuple[str, ...]
    says: str
    setup: Callable[[Path], None] | None = None
    key: bool = True
    fsize: int | None = None  # RLIMIT_FSIZE in bytes: writes past it fail with EFBIG ("disk full")
    read_only: bool = False  # uses a read-only directory (root then runs it without its override capabilities)

    def argv(self, directory: Path) -> list[str]:
        return [sys.executable, "-m", self.module, *(a.replace("{dir}", str(directory)) for a in self.args)]


# -- what the cases prepare ------------------------------------------------------------------

_good_runs: dict[str, Path] = {}
"""Set once per session: a finished audit run dir and a finished epistemic run dir to copy from."""


def write(relative: str, content: str | bytes) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return setup


def read_only_dir(relative: str) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        path = directory / relative
        path.mkdir(parents=True)
        path.chmod(0o555)
    return setup


def audit_run(edit: Callable[[Path], None] | None = None, *, running: bool = False) -> Callable[[Path], None]:
    """A copy of a finished audit at ``{dir}/run``; ``running`` makes it look killed mid-way."""
    def setup(directory: Path) -> None:
        run = directory / "run"
        shutil.copytree(_good_runs[AUDIT], run)
        if running:
            summary = json.loads((run / "summary.json").read_text())
            (run / "summary.json").write_text(json.dumps({**summary, "status": "started", "finished_at": None}))
        if edit is not None:
            edit(run)
    return setup


def truncate(relative: str) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        path = run / relative
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return edit


def epistemic_run(directory: Path) -> None:
    shutil.copytree(_good_runs[EPISTEMIC], directory / "erun")


def results(*rows: dict) -> Callable[[Path], None]:
    return write("results.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def row(**changes: object) -> dict:
    return {"id": "c1", "gold": "YES", "pred": "YES", "system": "s", "label": "E", **changes}


def both(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        for s in setups:
            s(directory)
    return setup


def gpu_endpoint(role: str) -> tuple[str, ...]:
    return ("+gateway.endpoints.gpu={api_base: 'http://127.0.0.1:9/v1', key_env: AUDIT_TEST_UNSET_KEY}",
            f"{role}.endpoint=gpu")


# -- the corpus ------------------------------------------------------------------------------

CASES: list[Case] = [
    # python -m audit: values
    Case("audit-max-iterations-abc", AUDIT, (*FAST, "max_iterations=abc"), "max_iterations"),
    Case("audit-max-iterations-zero", AUDIT, (*FAST, "max_iterations=0"), "max_iterations"),
    Case("audit-max-iterations-negative", AUDIT, (*FAST, "max_iterations=-3"), "max_iterations"),
    Case("audit-max-iterations-fraction", AUDIT, (*FAST, "max_iterations=2.5"), "max_iterations"),
    Case("audit-max-iterations-empty", AUDIT, (*FAST, "max_iterations="), "max_iterations"),
    Case("audit-temperature-negative", AUDIT, (*FAST, "sampling.temperature=-1"), "sampling.temperature"),
    Case("audit-temperature-text", AUDIT, (*FAST, "sampling.temperature=hot"), "sampling.temperature"),
    Case("audit-max-tokens-zero", AUDIT, (*FAST, "sampling.max_tokens=0"), "sampling.max_tokens"),
    Case("audit-max-tokens-text", AUDIT, (*FAST, "sampling.max_tokens=lots"), "sampling.max_tokens"),
    Case("audit-auditor-temperature", AUDIT, (*FAST, "auditor.temperature=9"), "auditor.temperature"),
    Case("audit-max-reask-negative", AUDIT, (*FAST, "auditor.max_reask=-1"), "auditor.max_reask"),
    Case("audit-structured-output", AUDIT, (*FAST, "auditor.structured_output=sometimes"), "sometimes"),
    Case("audit-topic-name-empty", AUDIT, (*FAST, "topic.name="), "topic.name"),
    Case("audit-topic-name-traversal", AUDIT, (*FAST, "topic.name=../../x"), "topic.name"),
    Case("audit-audited-name-traversal", AUDIT, (*FAST, "audited.name=../x"), "audited.name"),
    Case("audit-audited-model-empty", AUDIT, (*FAST, "audited.model="), "audited.model"),
    Case("audit-local-bad-role", AUDIT, (*FAST, "local=[judges]"), "local"),
    Case("audit-samples-zero", AUDIT, (*FAST, "samples=0"), "samples"),
    Case("audit-samples-text", AUDIT, (*FAST, "samples=many"), "samples"),
    Case("audit-budget-text", AUDIT, (*FAST, "budget.max_cost_usd=lots"), "budget.max_cost_usd"),
    Case("audit-budget-negative", AUDIT, (*FAST, "budget.max_cost_usd=-1"), "budget.max_cost_usd"),
    Case("audit-max-concurrency-zero", AUDIT, (*FAST, "gateway.max_concurrency=0"), "gateway.max_concurrency"),
    Case("audit-max-retries-negative", AUDIT, (*FAST, "gateway.max_retries=-1"), "gateway.max_retries"),
    Case("audit-timeout-zero", AUDIT, (*FAST, "gateway.timeout_s=0"), "gateway.timeout_s"),
    Case("audit-timeout-text", AUDIT, (*FAST, "gateway.timeout_s=soon"), "gateway.timeout_s"),
    Case("audit-api-base-not-url", AUDIT, (*FAST, "audited.endpoint=local", "gateway.endpoints.local.api_base=ftp://x"),
         "api_base"),
    # python -m audit: config structure
    Case("audit-unknown-topic", AUDIT, (*FAST, "topic=tiananmenn"), "Did you mean 'tiananmen'"),
    Case("audit-unknown-audited", AUDIT, (*FAST, "audited=kimi_k3"), "kimi_k2"),
    Case("audit-unknown-technique", AUDIT, (*FAST, "technique=prefil"), "prefill"),
    Case("audit-unknown-judge", AUDIT, (*FAST, "judge=maybe"), "judge"),
    Case("audit-unknown-launcher", AUDIT, (*FAST, "hydra/launcher=slurmm"), "slurm"),
    Case("audit-unknown-key", AUDIT, (*FAST, "max_iteration=3"), "max_iterations"),
    Case("audit-unknown-nested-key", AUDIT, (*FAST, "sampling.temprature=0.5"), "temperature"),
    Case("audit-added-key-nothing-reads", AUDIT, (*FAST, "+max_iteration=3"), "did you mean max_iterations=3?"),
    Case("audit-menu-without-auto", AUDIT, (*FAST, "technique.menu=[batch]"), "add technique=auto"),
    Case("audit-override-syntax", AUDIT, (*FAST, "topic=[tibet"), "[tibet"),
    Case("audit-unknown-endpoint", AUDIT, (*FAST, "audited.endpoint=gpu0"), "gpu0"),
    Case("audit-endpoint-key-unset", AUDIT, (*FAST, *gpu_endpoint("audited")), "AUDIT_TEST_UNSET_KEY"),
    Case("audit-no-key", AUDIT, FAST, "OPENROUTER_API_KEY", key=False),
    Case("audit-no-key-routes", AUDIT, FAST, "no key? add local=true", key=False),
    # python -m audit: where it writes
    Case("audit-output-dir-is-file", AUDIT, (*FAST, "output_dir={dir}/taken"), "taken: a file is in the way",
         setup=write("taken", "x")),
    Case("audit-output-dir-under-file", AUDIT, (*FAST, "output_dir={dir}/taken/out"), "taken: a file is in the way",
         setup=write("taken", "x")),
    Case("audit-output-dir-read-only", AUDIT, (*FAST, "output_dir={dir}/ro/out"), "ro/out: not writable",
         setup=read_only_dir("ro"), read_only=True),
    Case("audit-cache-read-only", AUDIT, (*FAST, "gateway.cache.enabled=true", "gateway.cache.path={dir}/ro/c.sqlite"),
         "gateway.cache", setup=read_only_dir("ro"), read_only=True),
    Case("audit-disk-full-early", AUDIT, FAST, "disk full or file too large", fsize=4000),
    Case("audit-disk-full-mid-run", AUDIT, FAST, "disk full or file too large", fsize=7000),
    Case("audit-auditor-echoes-key-escaped", AUDIT, ("auditor.model=test/echoes-key", *FAST[1:]), "[REDACTED]"),
    Case("audit-auditor-json-too-deep", AUDIT, ("auditor.model=test/deep-json", *FAST[1:]), "nests deeper than"),
    Case("audit-server-escape-sequences", AUDIT, ("auditor.model=test/escapes", *FAST[1:]), "bad key"),
    Case("epistemic-key-revoked-mid-run", EPISTEMIC, ("system=raw_llm", "system.model=test/revoked",
                                                      "cards.num_per_type=2", "gateway.max_retries=0",
                                                      "gateway.cache.enabled=false"),
         "key revoked"),
    # python -m audit resume=
    Case("audit-resume-missing", AUDIT, ("resume={dir}/nowhere",), "does not exist"),
    Case("audit-resume-not-a-run", AUDIT, ("resume={dir}/plain",), "not a run directory",
         setup=write("plain/notes.txt", "hello")),
    Case("audit-resume-a-file", AUDIT, ("resume={dir}/plain.txt",), "plain.txt", setup=write("plain.txt", "x")),
    Case("audit-resume-finished", AUDIT, ("resume={dir}/run",), "already finished", setup=audit_run()),
    Case("audit-resume-audited-override", AUDIT, ("resume={dir}/run", "audited=kimi_k2"), "audited",
         setup=audit_run(running=True)),
    Case("audit-resume-topic-and-iterations", AUDIT, ("resume={dir}/run", "topic=tibet", "max_iterations=9"),
         "topic cannot change", setup=audit_run(running=True)),
    Case("audit-resume-smaller-cap", AUDIT, ("resume={dir}/run", "max_iterations=1"), "larger max_iterations",
         setup=audit_run()),
    Case("audit-resume-zero-cap", AUDIT, ("resume={dir}/run", "max_iterations=0"), "max_iterations",
         setup=audit_run()),
    Case("audit-resume-truncated-turn", AUDIT, ("resume={dir}/run", "gateway.cache.enabled=false"), "002.json",
         setup=audit_run(truncate("auditor_turns/002.json"), running=True)),
    Case("audit-resume-truncated-response", AUDIT, ("resume={dir}/run", "gateway.cache.enabled=false"), "001.json",
         setup=audit_run(truncate("audited_responses/001.json"), running=True)),
    Case("audit-resume-truncated-summary", AUDIT, ("resume={dir}/run", "gateway.cache.enabled=false"),
         "summary.json", setup=audit_run(truncate("summary.json"))),
    Case("audit-resume-garbage-config", AUDIT, ("resume={dir}/run",), "config.yaml",
         setup=audit_run(lambda run: (run / "config.yaml").write_text("topic: [unclosed\n"), running=True)),
    # python -m audit.epistemic
    Case("epistemic-unknown-system", EPISTEMIC, ("system=kg_orcale",), "kg_oracle"),
    Case("epistemic-unknown-domain", EPISTEMIC, ("domain=river",), "rivers"),
    Case("epistemic-unknown-predicate", EPISTEMIC, ("predicate=has_mouht",), "has_mouth"),
    Case("epistemic-unknown-in-systems", EPISTEMIC, ("systems=[kg_oracle,rag2]",), "rag2"),
    Case("epistemic-unknown-stage", EPISTEMIC, ("stage=metric",), "metrics"),
    Case("epistemic-unknown-mapping", EPISTEMIC, ("metrics.mapping=strict",), "licensing"),
    Case("epistemic-unknown-key", EPISTEMIC, ("card.seed=3",), "card"),
    Case("epistemic-limit-text", EPISTEMIC, ("cards.num_per_type=many",), "cards.num_per_type"),
    Case("epistemic-limit-zero", EPISTEMIC, ("cards.num_per_type=0",), "cards.num_per_type"),
    Case("epistemic-limit-negative", EPISTEMIC, ("cards.num_per_type=-5",), "cards.num_per_type"),
    Case("epistemic-seed-text", EPISTEMIC, ("cards.seed=x",), "cards.seed"),
    Case("epistemic-unknown-suite", EPISTEMIC, ("cards.suites=[standard,hard]",), "hard"),
    Case("epistemic-samples-zero", EPISTEMIC, ("samples=0",), "samples"),
    Case("epistemic-workers-zero", EPISTEMIC, ("workers=0",), "workers=auto"),
    Case("epistemic-domain-name-traversal", EPISTEMIC, ("domain.name=../x",), "domain.name"),
    Case("epistemic-predicate-name-traversal", EPISTEMIC, ("predicate.name=../../x",), "predicate.name"),
    Case("epistemic-no-key", EPISTEMIC, ("system=raw_llm",), "OPENROUTER_API_KEY", key=False),
    Case("epistemic-unknown-endpoint", EPISTEMIC, ("system=raw_llm", "system.endpoint=gpu0"), "gpu0"),
    Case("epistemic-endpoint-key-unset", EPISTEMIC, ("system=raw_llm", *gpu_endpoint("system")),
         "AUDIT_TEST_UNSET_KEY"),
    Case("epistemic-llm-temperature", EPISTEMIC, ("system=raw_llm", "system.temperature=-1"), "system.temperature"),
    Case("epistemic-rag-top-k", EPISTEMIC, ("system=rag", "system.top_k=0"), "system.top_k"),
    Case("epistemic-resume-override", EPISTEMIC, ("resume={dir}/erun", "system=raw_llm", "cards.seed=4"),
         "system, cards.seed", setup=epistemic_run),
    Case("epistemic-resume-missing", EPISTEMIC, ("resume={dir}/nowhere",), "does not exist"),
    Case("epistemic-resume-not-a-run", EPISTEMIC, ("resume={dir}/plain",), "is not a run directory",
         setup=write("plain/notes.txt", "hello")),
    Case("epistemic-cards-missing", EPISTEMIC, ("cards.path={dir}/none.jsonl",), "none.jsonl"),
    Case("epistemic-cards-invalid-utf8", EPISTEMIC, ("cards.path={dir}/cards.jsonl",), "UTF-8",
         setup=write("cards.jsonl", b'{"id": "c\xff\xfe1"}\n')),
    Case("epistemic-cards-truncated", EPISTEMIC, ("cards.path={dir}/cards.jsonl",), "line 1",
         setup=write("cards.jsonl", '{"id": "c1", "label": "E", "go')),
    Case("epistemic-output-dir-is-file", EPISTEMIC, ("output_dir={dir}/taken",), "taken: a file is in the way",
         setup=write("taken", "x")),
    Case("epistemic-output-dir-read-only", EPISTEMIC, ("output_dir={dir}/ro/out",), "ro/out: not writable",
         setup=read_only_dir("ro"), read_only=True),
    Case("epistemic-metrics-no-results", EPISTEMIC, ("stage=metrics",), "results="),
    Case("epistemic-metrics-results-missing", EPISTEMIC, ("stage=metrics", "results={dir}/none.jsonl"), "none.jsonl"),
    Case("epistemic-metrics-pred-list", EPISTEMIC, ("stage=metrics", "results={dir}/results.jsonl"), "pred",
         setup=results(row(pred=["YES"]))),
    Case("epistemic-metrics-gold-list", EPISTEMIC, ("stage=metrics", "results={dir}/results.jsonl"), "gold",
         setup=results(row(gold=["YES"]))),
    Case("epistemic-metrics-pred-maybe", EPISTEMIC, ("stage=metrics", "results={dir}/results.jsonl"), "MAYBE",
         setup=results(row(), row(id="c2", pred="MAYBE"))),
    Case("epistemic-metrics-results-invalid-utf8", EPISTEMIC, ("stage=metrics", "results={dir}/results.jsonl"),
         "UTF-8", setup=write("results.jsonl", b'{"id": "\xc3("}\n')),
    Case("epistemic-metrics-results-not-json", EPISTEMIC, ("stage=metrics", "results={dir}/results.jsonl"),
         "line 2", setup=write("results.jsonl", json.dumps(row()) + "\n{oops\n")),
    Case("epistemic-metrics-output-read-only", EPISTEMIC,
         ("stage=metrics", "results={dir}/results.jsonl", "output_dir={dir}/ro"), "not writable",
         setup=both(results(row()), read_only_dir("ro")), read_only=True),
    # python -m audit.compare
    Case("compare-no-args", COMPARE, (), "DIR"),
    Case("compare-unknown-option", COMPARE, ("{dir}", "--bogus"), "--bogus"),
    Case("compare-missing-path", COMPARE, ("{dir}/nowhere",), "nowhere"),
    Case("compare-empty-dir", COMPARE, ("{dir}/empty",), "no runs", setup=lambda d: (d / "empty").mkdir()),
    Case("compare-no-runs", COMPARE, ("{dir}/stuff",), "no runs", setup=write("stuff/notes.txt", "hello")),
    Case("compare-a-file", COMPARE, ("{dir}/notes.txt",), "notes.txt", setup=write("notes.txt", "hello")),
    Case("compare-only-malformed-summary", COMPARE, ("{dir}/bad",), "summary.json",
         setup=write("bad/run/summary.json", '{"status": "compl')),
    Case("compare-out-is-file", COMPARE, ("{dir}/erun", "--out", "{dir}/taken"), "--out",
         setup=both(epistemic_run, write("taken", "x"))),
    Case("compare-out-read-only", COMPARE, ("{dir}/erun", "--out", "{dir}/ro"), "not writable",
         setup=both(epistemic_run, read_only_dir("ro")), read_only=True),
    Case("compare-out-disk-full", COMPARE, ("{dir}/erun", "--out", "{dir}/cmp"), "disk full or file too large",
         setup=epistemic_run, fsize=2000),
    # python -m audit.doctor
    Case("doctor-unknown-audited", DOCTOR, ("audited=kimi_k3",), "kimi_k2"),
    Case("doctor-model-empty", DOCTOR, ("audited.model=",), "audited.model"),
    Case("doctor-bad-model-id", DOCTOR, (f"audited.model={MISSING_MODEL}",), MISSING_MODEL),
    Case("doctor-unreachable", DOCTOR, ("audited.endpoint=local", "gateway.endpoints.local.api_base=http://127.0.0.1:9/v1",
                                        "gateway.max_retries=0"), "http://127.0.0.1:9/v1"),
    Case("doctor-no-key", DOCTOR, (), "OPENROUTER_API_KEY", key=False),
    Case("doctor-max-tokens-text", DOCTOR, ("max_tokens=few",), "max_tokens"),
    Case("doctor-temperature-negative", DOCTOR, ("temperature=-2",), "temperature"),
    Case("doctor-unknown-key", DOCTOR, ("canari=hi",), "canary"),
    Case("doctor-unknown-endpoint", DOCTOR, ("audited.endpoint=gpu0",), "gpu0"),
]


# -- running them ----------------------------------------------------------------------------

@dataclass(repr=False)
class Outcome:
    code: int
    stdout: str
    stderr: str
    before: dict[str, str]
    after: dict[str, str]
    summaries: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0


def fingerprint(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (the run lock aside) with a digest of its bytes."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != ".lock":
            out[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _preexec(case: Case) -> Callable[[], None] | None:
    """What the child does before it runs (:func:`tests.limits.limit_child`): a file-size limit, or,
    as root, giving up the capabilities that ignore file permissions for a read-only case."""
    if case.fsize is None and not (case.read_only and AS_ROOT):
        return None
    return functools.partial(limit_child, case.fsize, case.read_only and AS_ROOT)


def run_case(case: Case, directory: Path, server: FakeOpenRouter, base_env: dict[str, str]) -> Outcome:
    """Run one case in a subprocess. Called from a pool thread, so the environment comes from the
    caller: iterating ``os.environ`` here would race with pytest rewriting it in the main thread."""
    directory.mkdir(parents=True)
    if case.setup is not None:
        case.setup(directory)
    before = fingerprint(directory)
    env = {k: v for k, v in base_env.items() if not k.startswith(("OPENROUTER_", "HYDRA_"))}
    env.update(server.env())
    if not case.key:
        env.pop("OPENROUTER_API_KEY")
    started = time.monotonic()
    proc = entrypoints.run(case.argv(directory), cwd=directory, env=env, capture_output=True, text=True,
                           timeout=scaled(120), preexec_fn=_preexec(case))
    for path in directory.rglob("*"):  # let the tmp dir be cleaned up
        if path.is_dir():
            path.chmod(stat.S_IRWXU)
    after = fingerprint(directory)
    summaries = {}
    for name in after:
        if name.endswith("summary.json") and before.get(name) != after[name]:
            try:
                summaries[name] = json.loads((directory / name).read_text())
            except ValueError:
                summaries[name] = {"status": "<unreadable>"}
    return Outcome(proc.returncode, proc.stdout, proc.stderr, before, after, summaries, time.monotonic() - started)


def server_handler(script: Script) -> Callable[..., Reply | None]:
    """The scripted audit, and a 400 for the model id that does not exist (as OpenRouter says it)."""
    def handler(request: object) -> Reply | None:
        if request.json.get("model") == MISSING_MODEL:  # type: ignore[attr-defined]
            return error_reply(400, f"{MISSING_MODEL} is not a valid model ID")
        if request.json.get("model") in HOSTILE:  # type: ignore[attr-defined]
            return HOSTILE[request.json["model"]](request)  # type: ignore[attr-defined]
        return script.handler(request)
    return handler


class Outcomes:
    """The cases' outcomes: those selected in this session are run together (four at a time)
    on first use, any other on demand."""

    def __init__(self, root: Path, server: FakeOpenRouter, pool: ThreadPoolExecutor, selected: list[Case]):
        self.root, self.server, self.pool = root, server, pool
        self.env = dict(os.environ)  # read here, in the main thread (see run_case)
        self.futures = {c.id: pool.submit(run_case, c, root / c.id, server, self.env) for c in selected}

    def __getitem__(self, case_id: str) -> Outcome:
        if case_id not in self.futures:
            (case,) = [c for c in CASES if c.id == case_id]
            self.futures[case_id] = self.pool.submit(run_case, case, self.root / case_id, self.server, self.env)
        return self.futures[case_id].result()


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest) -> Iterator[Outcomes]:
    """One loopback server (the scripted audit) and one directory for all cases."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec") and "case" in item.callspec.params]
    root = Path(tempfile.mkdtemp(prefix="audit-bad-input-"))
    try:
        with FakeOpenRouter() as server, ThreadPoolExecutor(max_workers=4) as pool:
            server.handler = server_handler(Script(stop_at_turn=4))
            _good_runs[AUDIT] = good_audit_run(root / "good", server)
            _good_runs[EPISTEMIC] = good_epistemic_run(root / "good")
            yield Outcomes(root, server, pool, selected)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def good_audit_run(where: Path, server: FakeOpenRouter) -> Path:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    where.mkdir(parents=True, exist_ok=True)
    proc = entrypoints.run([sys.executable, "-m", AUDIT, *FAST, "output_dir=audit"], cwd=where, env=env,
                           capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (run,) = (where / "audit").iterdir()
    return run


def good_epistemic_run(where: Path) -> Path:
    proc = entrypoints.run([sys.executable, "-m", EPISTEMIC, "cards.num_per_type=5", "output_dir=epistemic"],
                           cwd=where, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (run,) = (where / "epistemic").iterdir()
    return run


# -- the bar every case must meet ------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_1_and_leaves_nothing_half_written(case: Case, outcomes: Outcomes):
    out = outcomes[case.id]
    shown = f"exit {out.code} after {out.seconds:.1f}s\nstderr:\n{out.stderr[-3000:]}\nstdout tail:\n{out.stdout[-800:]}"
    assert "Traceback" not in out.stderr + out.stdout, shown
    assert out.code == 1, shown
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and out.stderr.endswith("\n") and lines[0].startswith("error: "), shown
    assert case.says.lower() in lines[0].lower(), shown
    assert "\x1b" not in out.stderr and TEST_API_KEY not in out.stderr + out.stdout, shown  # no escapes, no key
    assert "cannot write a file" not in lines[0], f"the line must name the file\n{shown}"
    changed = [name for name, digest in out.before.items() if out.after.get(name) != digest]
    assert not changed, f"files that were there before changed or vanished: {changed}\n{shown}"
    for name, summary in out.summaries.items():
        assert summary.get("status") not in FINISHED, f"{name} says {summary.get('status')}\n{shown}"
        if "total_iterations" in summary:  # an audit's summary counts what is on disk
            responses = [n for n in out.after if n.startswith(str(Path(name).parent / "audited_responses") + "/")]
            assert summary["total_iterations"] == len(responses), f"{name}: {summary['total_iterations']} vs {responses}"


def test_the_corpus_is_large_and_covers_every_entrypoint():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)
    assert {c.module for c in CASES} == {AUDIT, EPISTEMIC, COMPARE, DOCTOR}


def test_disk_full_mid_run_keeps_the_iterations_it_wrote(outcomes: Outcomes):
    """The run got some iterations onto disk before the limit: the summary says error and counts them."""
    out = outcomes["audit-disk-full-mid-run"]
    (summary,) = [s for name, s in out.summaries.items() if name.startswith("out/")]
    assert summary["status"] == "error" and summary["total_iterations"] >= 1
    assert "disk full or file too large" in summary["error"]
