"""What a bad-input case's child does before it runs (``preexec_fn``): a module-level function, so a
warm child (``tests/entrypoints.py``) can be handed it as well as a cold one.

A file-size limit plays a full disk without root tricks: a write past it fails with EFBIG once
SIGXFSZ is ignored. As root, a read-only case gives up the capabilities that ignore file
permissions, so a 0555 directory is read-only for it: from its own effective and permitted sets
(``capset``), which takes hold at once, so a forked warm child needs no exec; and from the bounding
set, so a process it execs (a cold start's ``python``, a worker) cannot take them back.
"""

from __future__ import annotations

import ctypes
import resource
import signal

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
"""Root ignores file permissions through these capabilities."""
CAPABILITY_VERSION_3 = 0x20080522
"""``_LINUX_CAPABILITY_VERSION_3`` (``linux/capability.h``): 64-bit sets, as two 32-bit words."""


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def limit_child(fsize: int | None, drop_file_capabilities: bool) -> None:
    """Cap the size of any file the child writes (bytes, None: no cap); drop root's file-permission override."""
    if fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if drop_file_capabilities:
        _drop_file_capabilities()


def _drop_file_capabilities() -> None:
    """Without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, now and in whatever this process execs.

    The bounding set first (dropping from it needs CAP_SETPCAP, which the ``capset`` below keeps).
    ``capset`` sets the calling thread's capabilities only: a preexec_fn runs in the child's one
    thread before any other exists, and threads started later inherit them."""
    libc = ctypes.CDLL(None, use_errno=True)
    dropped = (1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    header, data = _Header(CAPABILITY_VERSION_3, 0), (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].effective &= ~dropped
    data[0].permitted &= ~dropped
    data[0].inheritable &= ~dropped
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
