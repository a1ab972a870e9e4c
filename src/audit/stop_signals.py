"""The signals that stop a run on purpose: Ctrl-C, ``kill`` or a scheduler's SIGTERM, a closed terminal's SIGHUP.

One list for every process that handles, blocks or resets them: the entrypoint (:mod:`audit.jobs.interrupts`),
a run's chat workers, the embedded model's server, a sweep's job workers. It sits on the base floor so the
gateway's processes below the job runtime take the same list.
"""

from __future__ import annotations

import signal

STOPS = (signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))  # SIGHUP: POSIX only
