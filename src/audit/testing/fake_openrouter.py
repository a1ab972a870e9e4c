"""``python -m audit.testing.fake_openrouter``: the loopback server started by hand.

It serves :class:`~audit.testing.server.FakeOpenRouter` until Ctrl-C, playing a whole scripted
audit by default (:mod:`audit.testing.scripted_audit`), so runs started by hand complete against
it. Tests import the server and the replies from their own modules.
"""

from __future__ import annotations

import argparse
import sys
import time

from audit.errors import UserError, exit_on_user_error
from audit.testing.replies import TEST_API_KEY, Handler, echo_reply, fixed_reply
from audit.testing.scripted_audit import Script
from audit.testing.server import FakeOpenRouter


def main(argv: list[str] | None = None) -> None:
    """Serve until Ctrl-C, for runs started by hand: by default it plays a whole scripted audit
    (auditor JSON, target text, judge labels) and answers epistemic cards YES/NO/UNKNOWN, so
    ``python -m audit`` and ``python -m audit.epistemic system=raw_llm`` complete against it;
    ``--echo`` answers every request with its own text, ``--reply TEXT`` with one fixed text
    (for poking at clients and for benchmarks)."""
    parser = argparse.ArgumentParser(prog="python -m audit.testing.fake_openrouter", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every reply")
    replies = parser.add_mutually_exclusive_group()
    replies.add_argument("--echo", action="store_true", help="echo requests instead of playing the scripted audit")
    replies.add_argument("--reply", help="answer every request with this text instead of playing the scripted audit")
    args = parser.parse_args(argv)
    if args.echo:
        handler: Handler = echo_reply
    elif args.reply is not None:
        handler = fixed_reply(args.reply)
    else:
        handler = Script().handler
    server = FakeOpenRouter(port=args.port, latency_s=args.latency, handler=handler)
    try:
        server.start()
    except OSError as exc:
        raise UserError(f"Cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pick another --port, or 0.") from None
    print(server.base_url, flush=True)  # first line of stdout: scripts read the URL from it
    print(f"point a run at it: OPENROUTER_API_BASE={server.base_url} OPENROUTER_API_KEY={TEST_API_KEY} "
          "python -m audit max_iterations=3", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    exit_on_user_error(main)
