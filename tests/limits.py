"""What a bad-input case's child does before it runs (``preexec_fn``): a module-level function, so a
warm child (``tests/entrypoints.py``) can be handed it as well as a cold one.

A file-size limit plays a full disk without root tricks: a write past it fails with EFBIG once
SIGXFSZ is ignored. As root, a read-only case gives up the capabilities that ignore file
permissions, so a 0555 directory is read-only for it.
"""

from __future__ import annotations

import ctypes
import resource
import signal

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
"""Root ignores file permissions through these capabilities (dropped from the bounding set)."""


def limit_child(fsize: int | None, drop_file_capabilities: bool) -> None:
    """Cap the size of any file the child writes (bytes, None: no cap); drop root's file-permission override."""
    if fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if drop_file_capabilities:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
