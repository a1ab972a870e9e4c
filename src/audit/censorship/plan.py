"""The checked settings of one audit (:class:`Plan`), read once from the config before anything is
written, so bad input fails with one line and an empty run dir is never left behind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit import config_values
from audit.censorship.action_kinds import check_menu
from audit.censorship.auditor_context import AuditorContext
from audit.censorship.draw_actions import Actions, AutoMenu, FixedTechnique
from audit.censorship.prompts import auditor_system_prompt
from audit.censorship.techniques import Target, check_technique
from audit.errors import UserError
from audit.judging.panel import Panel, panel_from_node
from audit.judging.prompts import topic_heading
from audit.llm.embedded import chosen_roles
from audit.llm.settings import role_endpoint, role_routing
from audit.llm.structured import check_mode
from audit.record.draws import AUTO
from audit.templates import get_family


@dataclass(frozen=True)
class Plan:
    """The checked settings of one audit, read once from the config."""

    auditor_system: str
    target: Target
    auditor_model: str
    auditor_max_tokens: int | None
    auditor_temperature: float | None
    auditor_endpoint: str
    auditor_structured: str
    max_reask: int
    judge: Mapping[str, Any] | None
    max_iterations: int
    actions: Actions
    """The run's kind, told apart here only: a fixed technique (a menu of one action) or ``technique=auto``'s
    menu. It answers what the auditor's reply may ask for, its OUTPUT FORMAT and what an iteration sends."""
    auditor_routing: Mapping[str, Any]
    """The auditor's provider routing and request extras (``auditor.provider``, ``auditor.extra_body``)."""
    panel: Panel | None = None
    context: AuditorContext = AuditorContext()
    """What the auditor is shown each turn (``auditor.context``: the whole transcript or the ledger)."""

    @property
    def technique(self) -> str:
        """The run's technique (``auto`` for ``technique=auto``)."""
        return self.actions.technique

    @property
    def with_baseline(self) -> bool:
        """Whether each probe also has an assistant baseline, scored apart."""
        return self.actions.with_baseline

    @property
    def output_format(self) -> str | None:
        """The OUTPUT FORMAT the auditor is shown (and re-asked with); None: the spec's."""
        return self.actions.output_format

    def endpoints(self) -> list[str]:
        """The endpoints this audit calls (their keys are required before anything is written)."""
        roles = [self.auditor_endpoint, self.target.endpoint]
        return roles + (self.panel.endpoints() if self.panel is not None else [])

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Plan:
        """Validate what can be validated before anything is written (bad input: UserError)."""
        name = str(cfg.technique.name)
        actions: Actions
        if name == AUTO:  # the one place a run's kind is told apart: everything after asks ``actions``
            batch_max = config_values.whole_number(cfg, "technique.batch_max", minimum=1)
            max_draws = config_values.whole_number(cfg, "technique.max_draws", minimum=1)
            assert batch_max is not None and max_draws is not None
            actions = AutoMenu(check_menu(cfg.technique.get("menu") or []), batch_max, max_draws)
        else:
            technique = check_technique(name)  # the fixed ones' message lists only them
            # the assistant technique's probe is already what the model says as the assistant
            with_baseline = bool(cfg.technique.get("with_baseline", False)) and technique != "assistant"
            actions = FixedTechnique(technique, str(cfg.technique.get("prefill_text") or ""), with_baseline)
        output = actions.output_format  # a menu action without its line in auto_menu.txt fails here
        try:
            auditor_system = auditor_system_prompt(cfg.topic, actions.technique, output)
            topic_heading(cfg.topic)  # the judge's topic text: checked now, not at the first judge call
        except ValueError as exc:
            raise UserError(f"{exc} (topic {cfg.topic.get('name')!r}); set it in the topic's yaml "
                            "or on the command line, e.g. topic.description=...") from None
        max_iterations = config_values.whole_number(cfg, "max_iterations", minimum=1)
        try:
            context = AuditorContext.from_node(cfg.auditor, max_iterations=max_iterations,
                                               table=cfg.get("prompt_caching") or ())
        except ValueError as exc:
            raise UserError(str(exc)) from None
        max_reask = config_values.whole_number(cfg, "auditor.max_reask", minimum=0, optional=True)
        config_values.model_id(cfg, "auditor.model")
        config_values.model_id(cfg, "audited.model")
        for role in ("sampling", "auditor", "judge"):
            config_values.temperature(cfg, f"{role}.temperature")
            config_values.max_tokens(cfg, f"{role}.max_tokens")
        judge = cfg.get("judge")
        # judge.models / judge.samples checked here; None: judge off
        panel = panel_from_node(judge, local="judge" in chosen_roles(cfg.get("local"), ROLES))
        audited = cfg.audited
        auditor_routing = role_routing(cfg.auditor, "auditor")  # checked now, not at the first auditor call
        return cls(
            auditor_system=auditor_system,
            target=Target(
                model=str(audited.model),
                family=get_family(str(audited.template)),
                provider=role_routing(audited, "audited")["provider"],
                extra_body=role_routing(audited, "audited")["extra_body"],
                assistant_max_tokens=audited.get("assistant_max_tokens"),
                system_prompt=audited.get("system_prompt"),
                max_tokens=cfg.sampling.get("max_tokens"),
                temperature=cfg.sampling.get("temperature"),
                endpoint=role_endpoint(audited),
            ),
            auditor_model=str(cfg.auditor.model),
            auditor_max_tokens=cfg.auditor.get("max_tokens"),
            auditor_temperature=cfg.auditor.get("temperature"),
            auditor_endpoint=role_endpoint(cfg.auditor),
            auditor_structured=check_mode(str(cfg.auditor.get("structured_output", "auto"))),
            max_reask=2 if max_reask is None else max_reask,
            judge=OmegaConf.to_container(judge, resolve=True) if panel is not None else None,
            max_iterations=max_iterations,
            actions=actions,
            auditor_routing=auditor_routing,
            panel=panel,
            context=context,
        )


ROLES = ("auditor", "audited", "judge")
"""The model roles of an audit; ``local=true`` routes all of them to the embedded model, ``local=[...]`` some."""
