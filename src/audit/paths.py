"""Where the Hydra config tree lives.

A wheel carries ``conf/`` inside the package (``audit/conf``); an editable install or a
plain checkout has it at the repository root. Resolving both here keeps every
entrypoint working from either kind of install.
"""

from __future__ import annotations

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
