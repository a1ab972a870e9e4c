"""Hydra's composition errors as one line (the subprocess cases are in tests/test_bad_input.py)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from audit.app.hydra_app import config_error_line, interrupted
from audit.paths import CONF_DIR


def composition_error(*overrides: str) -> BaseException:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        with pytest.raises((HydraException, OmegaConfBaseException)) as caught:
            compose("config", overrides=list(overrides))
    return caught.value


def test_unknown_group_option_lists_the_options_with_a_guess():
    line = config_error_line(composition_error("topic=tibett"))
    assert line.startswith("Unknown topic option 'tibett'. Did you mean 'tibet'") and "xinjiang" in line
    assert "\n" not in line


def test_unknown_key_suggests_the_key_at_that_level():
    line = config_error_line(composition_error("sampling.temprature=0.5"))
    assert line == ("Unknown config key 'sampling.temprature'. Did you mean 'sampling.temperature'? "
                    "Known keys here: max_tokens, temperature")


def test_other_errors_are_joined_onto_one_line():
    line = config_error_line(composition_error("topic=[tibet"))
    assert line.startswith("bad command line: ") and "[tibet" in line and "\n" not in line


def test_a_key_of_another_option_names_that_option():
    """technique.menu exists only under technique=auto: set on a user_persona run, the line says so."""
    line = config_error_line(composition_error("technique.menu=[user_persona,batch]"))
    assert line == "technique.menu is read only with technique=auto; add technique=auto to the command"


def test_a_ctrl_c_wrapped_in_a_composition_error_is_the_ctrl_c() -> None:
    """Hydra wraps an OmegaConf error in an empty ConfigCompositionException; when that error was raised
    while a Ctrl-C unwound (the interrupt is its context), the line must say interrupted, not "bad
    command line:" with nothing after it (seen once in a full run of tests/jobs/test_sweep_interrupt.py)."""
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import ReadonlyConfigError

    def composed() -> None:
        try:
            try:
                raise KeyboardInterrupt
            finally:
                raise ReadonlyConfigError("restoring a flag")
        except ReadonlyConfigError as e:
            raise ConfigCompositionException() from e

    with pytest.raises(ConfigCompositionException) as caught:
        composed()
    assert interrupted(caught.value)
    assert not interrupted(composition_error("topic=tibett"))
