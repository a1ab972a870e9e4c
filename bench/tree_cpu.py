"""The CPU of every process a command starts, its detached descendants included.

``/usr/bin/time`` and ``RUSAGE_CHILDREN`` count only the children that were waited for, all the way up: a
process whose parent never waits for it (a multiprocessing fork server, a browser's helpers, a daemonised
server) is missed, which made the suite's own CPU log ~30% short. This runs the command as a child
subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): every orphaned descendant is re-parented here and
reaped at the end, so the total holds all of them. The machine's other work is not in it, so the figure
holds on a shared machine where ``/proc/stat`` does not.

Run: ``python bench/tree_cpu.py <command ...>``, e.g. the README's pytest command; prints one line on stderr
and exits with the command's code.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(command: list[str]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("error: this kernel does not let a process reap its descendants (Linux only)")
    started = time.monotonic()
    code = subprocess.call(command)
    while True:  # the orphans re-parented here: each reaped adds its CPU to RUSAGE_CHILDREN
        try:
            os.wait()
        except ChildProcessError:
            break
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"every process: {used.ru_utime:.1f} s user + {used.ru_stime:.1f} s system = "
          f"{used.ru_utime + used.ru_stime:.1f} CPU-s in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python bench/tree_cpu.py <command ...>")
    sys.exit(main(sys.argv[1:]))
