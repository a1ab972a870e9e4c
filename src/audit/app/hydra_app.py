"""Start a Hydra entrypoint so that a bad command line is one line and exit 1.

Hydra reports a config it cannot compose (an unknown group option, an unknown key, an
override it cannot parse) over several lines: the list of options one per line, the config
search path, a hint about ``HYDRA_FULL_ERROR``. Our rule for bad input is one line naming
the problem and the fix, so each entrypoint runs its ``@hydra.main`` function through
:func:`run_app`: it sets ``HYDRA_FULL_ERROR=1`` (Hydra's documented switch to re-raise
instead of printing its report) and turns Hydra's and OmegaConf's exceptions into that
line. Bugs still raise with their full traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from difflib import get_close_matches

from hydra.errors import HydraException, MissingConfigException
from omegaconf.errors import OmegaConfBaseException

from audit.jobs import interrupts
from audit.jobs.added_keys import check_added_keys, options_holding
from audit.jobs.cli_help import maybe_help
from audit.jobs.finish import finish_argv
from audit.jobs.unstarted_sweep import drop_unstarted
from audit.errors import drop_abandoned_call_warnings, exit_on_user_error, unknown_choice
from audit.paths import conf_dir


def run_app(main: Callable[[], None], config_name: str) -> None:
    """Answer ``--help`` fast, else run ``main`` (a ``@hydra.main`` function); a config Hydra
    cannot compose exits 1 with :func:`config_error_line`; a Ctrl-C that lands in Hydra itself
    (composing a sweep's next job) exits 1 with one line, as a Ctrl-C within a run does."""
    try:
        maybe_help(config_name)
        # resume=<sweep dir>: the sweep's own command, into its dir
        sys.argv[1:] = exit_on_user_error(lambda: finish_argv(sys.argv[1:], config_name))
        exit_on_user_error(lambda: check_added_keys(sys.argv[1:], config_name, conf_dir()))
        os.environ["HYDRA_FULL_ERROR"] = "1"
        interrupts.running()
        try:
            main()
        except (HydraException, OmegaConfBaseException) as exc:
            if interrupted(exc):  # a Ctrl-C that Hydra's composition wrapped is still the Ctrl-C
                _say_interrupted()
            drop_unstarted()  # a sweep whose jobs never composed leaves no empty multirun/<date>/
            interrupts.ending()
            print(f"error: {config_error_line(exc)}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:  # outside any run (a run says interrupted itself): Hydra, an import, the end
            _say_interrupted()
    finally:
        interrupts.ending()  # the run is over or its line printed: a late signal adds nothing


def interrupted(exc: BaseException) -> bool:
    """A ``KeyboardInterrupt`` anywhere in ``exc``'s chain: a Ctrl-C that landed while Hydra composed a
    sweep's next job can come out as a composition error with an empty message (a clean-up in OmegaConf
    raising while the interrupt unwinds, which Hydra wraps); the user pressed Ctrl-C, not a bad key."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


def _say_interrupted() -> None:
    interrupts.ending()
    drop_abandoned_call_warnings()
    if {"-m", "--multirun"} & set(sys.argv[1:]):
        print("error: interrupted between runs; no run was cut short (finish a sweep with resume=<its sweep dir>)",
              file=sys.stderr)
    else:
        print("error: interrupted outside the run; no run was cut short (a run dir it made resumes with "
              "resume=<run dir>, else run the command again)", file=sys.stderr)
    raise SystemExit(1) from None


def config_error_line(exc: BaseException) -> str:
    """One line for a composition error: the group's options with a did-you-mean, the keys
    an unknown key could have meant, else Hydra's own message joined onto one line."""
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and exc.options:
        group, _, choice = exc.missing_cfg_file.rpartition("/")
        return str(unknown_choice(f"{group} option", choice, exc.options))
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and "not in struct" in str(cause) and cause.full_key:
        parent = cause.parent_node
        keys = [str(k) for k in parent.keys() if k != "hydra"] if isinstance(parent, Mapping) else []
        where = cause.full_key.rpartition(".")[0]
        close = get_close_matches(str(cause.key), keys, n=3)
        hint = f" Did you mean {', '.join(repr(f'{where}.{k}' if where else k) for k in close)}?" if close else ""
        holders = options_holding(conf_dir(), str(cause.full_key))
        if holders:
            group = str(cause.full_key).split(".")[0]
            picks = " or ".join(f"{group}={o}" for o in holders)
            return f"{cause.full_key} is read only with {picks}; add {picks.split(' or ')[0]} to the command"
        return f"Unknown config key {cause.full_key!r}.{hint} Known keys here: {', '.join(keys)}"
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip()
                    and not line.startswith("See https://hydra.cc"))
    return f"bad command line: {text}" if isinstance(exc, HydraException) else f"bad config value: {text}"
