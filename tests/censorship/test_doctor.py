"""The raw-completion check: heuristics, verdicts and the ``python -m audit.doctor`` exit codes."""

from __future__ import annotations

import os
import sys

import pytest

import asyncio
import json

from omegaconf import OmegaConf

from audit.censorship.provider_check import today
from audit.censorship.doctor import FOLLOW_UPS, TOKEN_CANARY_TOKENS, ContentCanary, Diagnosis, ProviderCheck, diagnose, \
    token_canary
from audit.errors import UserError
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.templates import get_family
from audit.testing.providers import LoadBalanced, ServedBy
from audit.testing.replies import error_reply
from audit.paths import CONF_DIR
from audit.testing.scripted_audit import Script
from tests import entrypoints

CANARY = ContentCanary.parse(OmegaConf.load(f"{CONF_DIR}/doctor.yaml").canary)
"""The shipped content canary (``conf/doctor.yaml``)."""
RAW = "esday, Thursday, Friday"
"""A raw completion's reply to it."""


@pytest.mark.parametrize("reply, continued", [
    (RAW, True), ("th, Thursdies, Fridays.", True),          # SmolLM2-135M's, under its repeat penalty
    (" blue! Those three are the primary colours", False),   # lower-case, yet a chat answer
    ("Wednesday, Thursday, Friday", False),                  # the list, but from a new turn
    ("It looks like you are listing the days of the week.", False),
    ("\n\nsure! Here are", False), ("", False), (" esday", False), ("...esday", False),
])
def test_content_canary_is_continued_only_inside_the_cut_word(reply, continued):
    assert CANARY.sent.endswith("Wedn")
    assert CANARY.continued(reply) is continued


@pytest.mark.parametrize("canary", ["", "Monday, Tuesday, ", "Monday, Tuesday.", "MONDAY, TUESDAY, WEDN", "1, 2, 3"])
def test_a_canary_not_cut_mid_word_is_refused_with_the_fix(canary):
    with pytest.raises(UserError, match="must end in the middle of a word"):
        ContentCanary.parse(canary)


def report_of(*checks, pin=None):
    return Diagnosis(model="m/x", name="x", template="kimi_k2", provider_requested=pin, prompt="p",
                     providers={c.provider: c for c in checks}, errors=[]).report()


def test_report_prints_a_pin_only_for_a_named_provider_that_passed():
    honest = ProviderCheck("Honest", CANARY, [TOKEN_CANARY_TOKENS], [RAW])
    wrapper = ProviderCheck("Wrapper", CANARY, [TOKEN_CANARY_TOKENS + 9], [" blue! Those are"])
    lines = report_of(honest, wrapper)
    assert lines[-1].startswith("pin to paste: 'audited.provider={only:[honest],allow_fallbacks:false}'")
    assert "verdict: WRAPPED" in lines[-2]
    local = report_of(ProviderCheck("unknown", CANARY, [TOKEN_CANARY_TOKENS], [RAW]))
    assert local[-1].startswith("verdict: OK") and not any("pin to paste" in line for line in local)
    assert report_of(honest, pin={"only": ["Honest"]})[-1].startswith("verdict: OK")


NINE = ("deepseek_v3", "deepseek_v3_1", "deepseek_r1", "kimi_k2", "kimi_k2_thinking", "qwen2_5", "qwen3",
        "glm_4_5", "minimax_m1")
"""The families of the nine shipped audited models (conf/audited)."""


def check(reports, replies=(RAW,)):
    return ProviderCheck("P", CANARY, list(reports), list(replies)).verdict


def test_verdicts_per_provider():
    n = TOKEN_CANARY_TOKENS
    assert check([n, n + 1]) == "ok"                      # verbatim; a server may add one BOS
    assert check([n + 2]) == "wrapping"                   # two more tokens: a template's markers
    assert check([n, n + 20]) == "wrapping"               # one wrapped canary is enough
    assert check([0]) == "unsure"                         # no usage reported: cannot tell
    assert check([]) == "unsure"
    assert check([n], ["Wednesday!"]) == "wrapping"       # billed verbatim but answered: a hidden wrap
    assert check([0], [" blue! Those"]) == "wrapping"     # no usage, yet the text shows the wrap
    assert check([n], [RAW, "Wednesday!"]) == "unsure"    # replies that disagree
    assert check([n], [RAW, ""]) == "unsure"              # an empty reply finishes nothing
    assert check([n], [""]) == "unsure"


def diagnose_on(server, family: str, *, canaries: int) -> Diagnosis:
    """The doctor's check of an unpinned model of ``family`` against ``server``, in this process."""
    gateway = Gateway(GatewaySettings(api_base=server.base_url, max_retries=0, cache_enabled=False), "k")
    audited = OmegaConf.create({"model": "m/x", "template": family, "provider": None, "system_prompt": None})

    async def check_once() -> Diagnosis:
        try:
            return await diagnose(gateway, audited, CANARY, max_tokens=24, temperature=0.0, canaries=canaries)
        finally:
            await gateway.aclose()

    return asyncio.run(check_once())


@pytest.mark.parametrize("family", NINE)
@pytest.mark.parametrize("provider,verdict,decided_by", [
    (ServedBy("Wrapper", wraps=True), "wrapping", "token canary billed"),
    (ServedBy("WrapperBos", wraps=True, adds_bos=True), "wrapping", "token canary billed"),
    (ServedBy("Hidden", wraps=True, bills_as_sent=True), "wrapping", "content canary: 0 of 2 replies went on"),
    (ServedBy("HiddenBos", wraps=True, adds_bos=True, bills_as_sent=True), "wrapping",
     "content canary: 0 of 2 replies went on"),
    (ServedBy("Raw"), "ok", "token canary billed"), (ServedBy("RawBos", adds_bos=True), "ok", "token canary billed"),
], ids=["wrap", "wrap+bos", "hidden", "hidden+bos", "raw", "raw+bos"])
def test_doctor_catches_every_familys_wrap_and_passes_its_raw_prompt(fake_openrouter, tmp_path, family, provider,
                                                                      verdict, decided_by):
    """Against a loopback provider that renders the prompt as one user message in the family's own
    template, the doctor says WRAPPING, although the wrapped reply starts lower-case: by the bill when
    the provider bills that rendering, by the text when it bills the prompt as sent (a hidden wrap,
    which passed as OK when the bill was the only test); against one feeding it verbatim, OK."""
    fake_openrouter.handler = LoadBalanced(get_family(family), [provider])
    diagnosis = diagnose_on(fake_openrouter, family, canaries=2)
    assert {p: c.verdict for p, c in diagnosis.providers.items()} == {provider.name: verdict}
    assert diagnosis.honoured is (verdict == "ok")
    check = diagnosis.providers[provider.name]
    assert check.decided_by.startswith(decided_by)
    if provider.bills_as_sent:  # the bill alone says verbatim: only the content canary saw the wrap
        assert all(r == TOKEN_CANARY_TOKENS + provider.adds_bos for r in check.token_reports)
        assert "the token canary was billed" in check.decided_by


class ByKind(LoadBalanced):
    """A load balancer that, unpinned, happens to send every token canary to the first provider and
    every sentence to the second (OpenRouter draws each request's provider on its own, so any split
    can happen); a pin is honoured as in :class:`LoadBalanced`."""

    def route(self, request):
        if (request.json or {}).get("provider"):
            return super().route(request)
        tokens = request.json["prompt"] == token_canary(self.family)
        return self.providers[0 if tokens else 1]


def test_a_provider_the_balancer_sent_one_kind_of_canary_is_sent_the_other_pinned(fake_openrouter):
    """Unpinned, Honest bills the token canaries verbatim but never sees the content canary and Plain
    only answers the content canary: without the pinned follow-ups both would be UNSURE. A wrapping
    provider that only answered the content canary needs none: its text already showed the wrap.
    A pin names a provider by its slug, not the name a reply gives (a two-word name shows the difference)."""
    fake_openrouter.handler = ByKind(get_family("kimi_k2"), [ServedBy("Honest AI Cloud", slug="honest-ai-cloud"),
                                                             ServedBy("Plain")])
    diagnosis = diagnose_on(fake_openrouter, "kimi_k2", canaries=4)
    assert {p: c.verdict for p, c in diagnosis.providers.items()} == {"Honest AI Cloud": "ok", "Plain": "ok"}
    assert {p: c.pinned for p, c in diagnosis.providers.items()} == {"Honest AI Cloud": FOLLOW_UPS,
                                                                     "Plain": FOLLOW_UPS}
    pins = [r.json["provider"] for r in fake_openrouter.completion_requests() if r.json.get("provider")]
    assert sorted(p["only"][0] for p in pins) == ["honest-ai-cloud"] * FOLLOW_UPS + ["plain"] * FOLLOW_UPS
    assert all(p["allow_fallbacks"] is False for p in pins)
    assert "2 canaries re-sent pinned to this provider" in "\n".join(diagnosis.report())
    fake_openrouter.handler = ByKind(get_family("kimi_k2"), [ServedBy("Honest"), ServedBy("Wrapper", wraps=True)])
    diagnosis = diagnose_on(fake_openrouter, "kimi_k2", canaries=4)
    assert {p: (c.verdict, c.pinned) for p, c in diagnosis.providers.items()} == {
        "Honest": ("ok", FOLLOW_UPS), "Wrapper": ("wrapping", 0)}


def doctor(tmp_path, server, *args, cold=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
    return entrypoints.run([sys.executable, "-m", "audit.doctor", *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, cold=cold)


def test_doctor_exit_codes_against_the_loopback_server(tmp_path, fake_openrouter, cache_root):
    fake_openrouter.handler = LoadBalanced(get_family("kimi_k2"), [ServedBy("GoodProv")])
    ok = doctor(tmp_path, fake_openrouter, "audited=kimi_k2", "audited.provider={order:[goodprov]}", cold=True)  # on purpose
    assert ok.returncode == 0, ok.stderr
    assert "served by GoodProv" in ok.stdout and "verdict: OK" in ok.stdout
    requests = fake_openrouter.completion_requests()
    family = get_family("kimi_k2")
    assert len(requests) == 8  # four canaries of each kind
    assert {r.json["prompt"] for r in requests} == {family.user_persona_prompt(CANARY.sent), token_canary(family)}
    assert all(r.json["stop"] == list(family.stops) and r.json["provider"] == {"order": ["goodprov"]}
               for r in requests)
    fake_openrouter.handler = None
    fake_openrouter.push_completion(*[error_reply(404, "No endpoints found that support the completions API")] * 8)
    missing = doctor(tmp_path, fake_openrouter, "audited=glm_4_5")
    assert missing.returncode == 2 and "routing" in missing.stdout
    # the check never fills the response cache; it keeps only its verdicts
    assert [p.relative_to(cache_root).as_posix() for p in cache_root.rglob("*") if p.is_file()] \
        == ["doctor/verdicts.json"]


def test_load_balanced_providers_are_judged_apart_and_a_wrapping_one_is_refused(tmp_path, fake_openrouter,
                                                                                  cache_root):
    """One raw provider and one wrapping provider behind an unpinned model: the doctor judges each on
    its own canaries, prints the raw one's pin to paste, and remembers the wrapping one, so a
    user-persona audit from it refuses to start (one line naming the doctor command)."""
    fake_openrouter.handler = LoadBalanced(get_family("kimi_k2"), [ServedBy("Honest"), ServedBy("Wrapper", wraps=True)],
                                           inner=Script().handler)
    result = doctor(tmp_path, fake_openrouter, "audited=kimi_k2")
    assert result.returncode == 2, result.stderr
    assert "served by Honest, Wrapper" in result.stdout
    assert "provider Honest:" in result.stdout and "verdict: OK" in result.stdout.split("provider Wrapper:")[0]
    assert "verdict: WRAPPING" in result.stdout.split("provider Wrapper:")[1]
    assert "pin to paste: 'audited.provider={only:[honest],allow_fallbacks:false}'" in result.stdout
    kept = json.loads((cache_root / "doctor" / "verdicts.json").read_text())["verdicts"]
    assert {(v["endpoint"], v["model"], v["provider"], v["verdict"]) for v in kept} == {
        (fake_openrouter.base_url, "moonshotai/kimi-k2", "Honest", "ok"),
        (fake_openrouter.base_url, "moonshotai/kimi-k2", "Wrapper", "wrapping")}
    assert all(v["date"] == today() for v in kept)
    assert [v["decided_by"] for v in kept if v["verdict"] == "wrapping"][0].startswith("token canary billed")
    assert "decided by:    token canary billed" in result.stdout.split("provider Wrapper:")[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | fake_openrouter.env()
    run = entrypoints.run([sys.executable, "-m", "audit", "audited=kimi_k2", "output_dir=out", "judge=off"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and not (tmp_path / "out").exists()
    (line,) = run.stderr.strip().splitlines()
    assert "Wrapper wraps /completions prompts" in line and "python -m audit.doctor audited=kimi_k2" in line
    assert f"at {fake_openrouter.base_url} (doctor's verdict of {today()}: token canary billed" in line
    assert "python -m audit.doctor audited=kimi_k2 verdicts=forget" in line


def short_audit(tmp_path, server):
    """A one-iteration user-persona audit of kimi_k2 against ``server`` playing the scripted audit."""
    server.handler = Script().handler
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
    return entrypoints.run([sys.executable, "-m", "audit", "audited=kimi_k2", "output_dir=out", "judge=off",
                            "max_iterations=1"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_verdict_binds_to_its_endpoint_and_is_listed_and_forgotten(tmp_path, fake_openrouter, cache_root):
    """A wrap found on one server (a loopback server tried by hand) never refuses a run on another (the
    real service); --list names where and when each verdict was reached; --forget clears this endpoint's.
    Before, verdicts were keyed by model and provider only and merged forever."""
    from audit.testing.server import FakeOpenRouter

    fake_openrouter.handler = LoadBalanced(get_family("kimi_k2"), [ServedBy("Wrapper", wraps=True)])
    assert doctor(tmp_path, fake_openrouter, "audited=kimi_k2").returncode == 2
    with FakeOpenRouter() as other:
        run = short_audit(tmp_path, other)
        assert run.returncode == 0, run.stderr
        listed = doctor(tmp_path, other, "--list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if "Wrapper" in line]
    assert row.startswith(f"  {today()}  wrapping") and fake_openrouter.base_url in row  # another endpoint: no '*'
    forgot = doctor(tmp_path, fake_openrouter, "audited=kimi_k2", "--forget")
    assert forgot.returncode == 0 and f"forgot 1 verdict(s) of moonshotai/kimi-k2 at {fake_openrouter.base_url}" \
        in forgot.stdout
    assert json.loads((cache_root / "doctor" / "verdicts.json").read_text()) == {"verdicts": []}


def test_verdicts_kept_before_they_named_an_endpoint_never_refuse(tmp_path, fake_openrouter, cache_root):
    (cache_root / "doctor").mkdir(parents=True)
    (cache_root / "doctor" / "verdicts.json").write_text(json.dumps({"moonshotai/kimi-k2": {"Wrapper": "wrapping"}}))
    run = short_audit(tmp_path, fake_openrouter)
    assert run.returncode == 0, run.stderr
    listed = doctor(tmp_path, fake_openrouter, "--list")
    assert "unknown (kept before verdicts named their endpoint)" in listed.stdout


def test_the_pin_offered_bills_exactly_and_honours_max_tokens(fake_openrouter):
    """Three providers pass the wrap check; before, the alphabetically first was offered as the pin even
    when it added a second BOS (DeepSeek's template starts with one) or billed 4x the max_tokens asked."""
    fake_openrouter.handler = LoadBalanced(get_family("deepseek_v3"), [
        ServedBy("Alpha", ignores_max_tokens=True), ServedBy("Bos", adds_bos=True), ServedBy("Exact")])
    diagnosis = diagnose_on(fake_openrouter, "deepseek_v3", canaries=6)
    assert {p: c.verdict for p, c in diagnosis.providers.items()} == {"Alpha": "ok", "Bos": "ok", "Exact": "ok"}
    alpha = diagnosis.providers["Alpha"]
    assert alpha.overruns and all(billed == 4 * allowed for billed, allowed in alpha.overruns)
    assert not diagnosis.providers["Exact"].overruns and diagnosis.providers["Exact"].exact
    report = "\n".join(diagnosis.report())
    assert "max_tokens:    IGNORED in" in report.split("provider Alpha:")[1].split("provider Bos:")[0]
    assert ("pin to paste: 'audited.provider={only:[exact],allow_fallbacks:false}'   "
            "(bills the prompt exactly, honours max_tokens;") in report
