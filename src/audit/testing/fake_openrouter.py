"""``python -m audit.testing.fake_openrouter``: the loopback server started by hand.

It serves :class:`~audit.testing.server.FakeOpenRouter` until Ctrl-C, playing a whole scripted
audit by default (:mod:`audit.testing.scripted_audit`), so runs started by hand complete against
it. Tests import the server and the replies from their own modules.
"""

from __future__ import annotations

import argparse
import sys
import time

import itertools
import threading

from audit.errors import UserError, exit_on_user_error
from audit.templates import get_family
from audit.testing import documented
from audit.testing.providers import LoadBalanced, ServedBy
from audit.testing.replies import COMPLETION, TEST_API_KEY, Handler, RecordedRequest, Reply, echo_reply, fixed_reply
from audit.testing.scripted_audit import Script
from audit.testing.server import FakeOpenRouter

FAULTS = {
    "error_finish": lambda request: documented.error_finish(COMPLETION),
    "empty": lambda request: documented.empty(COMPLETION),
    "reasoning_only": lambda request: documented.reasoning_only(COMPLETION),
    "content_filter": lambda request: documented.content_filter(COMPLETION),
    "model_not_found": lambda request: documented.model_not_found(str((request.json or {}).get("model"))),
    "payment": lambda request: documented.payment_required(),
    "moderation": lambda request: documented.moderation(),
    "region": lambda request: documented.region_blocked(),
    "routing": lambda request: documented.routing_404(),
    "guardrail": lambda request: documented.guardrail_blocked(),
    "permission": lambda request: documented.permission_denied(),
    "content_policy": lambda request: documented.content_policy(),
    "refusal": lambda request: documented.refusal(),
    "compressed": lambda request: documented.compressed(COMPLETION),
}
"""OpenRouter's documented replies (:mod:`audit.testing.documented`) that ``--fault`` plays."""

FAULTS.update({
    **{f"availability.{code}": (lambda request, code=code: documented.availability(
        code, str((request.json or {}).get("model")), retry_after=1.0 if documented.AVAILABILITY[code][2] else None))
       for code in documented.AVAILABILITY},
    "capacity": lambda request: documented.capacity_exhausted(retry_after=1.0),
    "provider_429": lambda request: documented.provider_rate_limited(),
    "guardrail_metadata": lambda request: documented.guardrail_with_metadata(),
    "fallback": lambda request: documented.fell_back(COMPLETION),
})
"""The errors guide's availability codes (``availability.<code>``; the retryable ones with a 1 s
``Retry-After``), a capacity 429 as the guide's example sends it, a provider's typed 429, the guardrail
403 with router metadata, and a reply served by a fallback provider (router metadata ``attempts``)."""


def with_fault(handler: Handler, fault: str, every: int) -> Handler:
    """``handler``, with every ``every``-th /completions request answered by the documented ``fault``."""
    count = itertools.count(1)
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> Reply | None:
        if request.endpoint == COMPLETION:
            with lock:
                n = next(count)
            if n % every == 0:
                return FAULTS[fault](request)
        return handler(request)

    return answer


def providers(spec: str) -> list[ServedBy]:
    """``Honest,Wrapper:wraps,Bos:bos`` -> the providers (``:wraps`` renders the prompt as a chat
    message in the model's template; ``:hidden`` wraps it too but bills the prompt as sent; ``:bos``
    adds a BOS token to every prompt; ``:long`` ignores ``max_tokens``, billing four times it)."""
    served = []
    for item in spec.split(","):
        name, *flags = item.strip().split(":")
        unknown = set(flags) - {"wraps", "hidden", "bos", "long"}
        if not name or unknown:
            raise UserError(f"--providers {spec!r}: each item is NAME[:wraps|:hidden][:bos][:long], "
                            "e.g. Honest,Wrapper:wraps")
        served.append(ServedBy(name, wraps=bool({"wraps", "hidden"} & set(flags)), adds_bos="bos" in flags,
                               ignores_max_tokens="long" in flags, bills_as_sent="hidden" in flags))
    return served


def main(argv: list[str] | None = None) -> None:
    """Serve until Ctrl-C, for runs started by hand: by default it plays a whole scripted audit
    (auditor JSON, target text, judge labels, fact verdicts and honesty/awareness assessments) and answers
    epistemic cards YES/NO/UNKNOWN, so
    ``python -m audit`` and ``python -m audit.epistemic system=raw_llm`` complete against it;
    ``--echo`` answers every request with its own text, ``--reply TEXT`` with one fixed text
    (for poking at clients and for benchmarks)."""
    parser = argparse.ArgumentParser(prog="python -m audit.testing.fake_openrouter", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every reply")
    replies = parser.add_mutually_exclusive_group()
    replies.add_argument("--echo", action="store_true", help="echo requests instead of playing the scripted audit")
    replies.add_argument("--reply", help="answer every request with this text instead of playing the scripted audit")
    parser.add_argument("--providers", help="serve /completions from these load-balanced providers, "
                        "e.g. Honest,Wrapper:wraps,Sneaky:hidden (wraps: the prompt as a chat message in --template's "
                        "template; hidden: wrapped too but billed as sent; bos: a BOS added; long: max_tokens ignored)")
    parser.add_argument("--template", default="deepseek_v3", help="the audited model's chat template family "
                        "(for --providers' wrapping)")
    parser.add_argument("--fault", choices=sorted(FAULTS), help="answer every --every-th /completions request "
                        "with this documented OpenRouter reply")
    parser.add_argument("--every", type=int, default=3, help="how often --fault answers (default: every 3rd)")
    args = parser.parse_args(argv)
    if args.echo:
        handler: Handler = echo_reply
    elif args.reply is not None:
        handler = fixed_reply(args.reply)
    else:
        handler = Script().handler
    if args.providers:
        handler = LoadBalanced(get_family(args.template), providers(args.providers), inner=handler)
    if args.fault:
        if args.every < 1:
            raise UserError(f"--every {args.every}: must be at least 1")
        handler = with_fault(handler, args.fault, args.every)
    server = FakeOpenRouter(port=args.port, latency_s=args.latency, handler=handler)
    try:
        server.start()
    except OSError as exc:
        raise UserError(f"Cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pick another --port, or 0.") from None
    print(server.base_url, flush=True)  # first line of stdout: scripts read the URL from it
    print(f"point a run at it: OPENROUTER_API_BASE={server.base_url} OPENROUTER_API_KEY={TEST_API_KEY} "
          "python -m audit max_iterations=3 (technique=auto works too)", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    exit_on_user_error(main)
