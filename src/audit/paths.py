"""Where the Hydra config tree and the cache root live.

A wheel carries ``conf/`` inside the package (``audit/conf``); an editable install or a
plain checkout has it at the repository root. Resolving both here keeps every
entrypoint working from either kind of install.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def conf_dir() -> Path:
    """Return the directory holding the Hydra config groups."""
    packaged = PACKAGE_DIR / "conf"
    if packaged.is_dir():
        return packaged
    checkout = PACKAGE_DIR.parent.parent / "conf"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"audit config tree not found (looked in {packaged} and {checkout}); reinstall the package"
    )


CONF_DIR = str(conf_dir())


CACHE_ENV = "AUDIT_CACHE_DIR"


def cache_root() -> Path:
    """The one cache root: ``$AUDIT_CACHE_DIR``, else ``~/.cache/audit``.

    Runs read it from the config key ``cache.dir`` (``conf/cache/default.yaml``, which
    defaults to the same place); this is the default for code that builds a gateway without
    a config (benches, tools), so nothing ever lands in whatever directory a run starts from.
    """
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "audit").expanduser()
