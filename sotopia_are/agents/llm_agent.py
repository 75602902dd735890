"""`LLMAgent`: an episode participant whose every action is one structured model call.

The prompt is the template ``agent_action.j2`` rendered from the :class:`AgentTurn` alone
(so the agent can only ever say what the runner let it see). The answer must be an
:class:`AgentAction` whose type is one of the turn's available actions and whose private
recipients (``to``) are other participants; anything else is fed back to the model by the
LLM layer's retry, and a final failure raises :class:`GenerationError` — it is never
turned into "did nothing".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from pydantic import JsonValue, ValidationInfo, create_model, field_validator

from sotopia_are.llm import LLMCall, LLMError, LLMSession
from sotopia_are.messages import AgentAction, validate_recipients
from sotopia_are.messages.action import ActionType
from sotopia_are.social.protocol import AgentTurn

__all__ = ["ACTION_TEMPLATE", "LLMAgent", "action_output_type"]

ACTION_TEMPLATE = "agent_action.j2"
"""The default prompt template of :class:`LLMAgent` (in ``prompts/``)."""


# Cached because building a pydantic model costs far more than a turn's framework budget,
# and the same (sender, participants, actions) recur in every turn of every episode.
@lru_cache(maxsize=1024)
def action_output_type(
    sender: str, participants: tuple[str, ...], available_actions: tuple[ActionType, ...]
) -> type[AgentAction]:
    """An :class:`AgentAction` subclass that only validates what ``sender`` may do now.

    ``action_type`` must be one of ``available_actions``; ``to`` must name participants
    other than ``sender`` (checked by :func:`validate_recipients`, whose message names the
    allowed recipients — it is what the model reads when asked to try again).
    """

    def check_action_type(value: ActionType, _info: ValidationInfo) -> ActionType:
        if value not in available_actions:
            raise ValueError(
                f"{value!r} is not available now; choose one of {list(available_actions)}"
            )
        return value

    def check_recipients(value: list[str] | None, _info: ValidationInfo) -> list[str] | None:
        return validate_recipients(value, participants, sender) if value else None

    # Named like its base so the schema and the call records say "AgentAction".
    return create_model(
        "AgentAction",
        __base__=AgentAction,
        __validators__={
            "check_action_type": field_validator("action_type")(check_action_type),
            "check_recipients": field_validator("to")(check_recipients),
        },
    )


class LLMAgent:
    """An agent that asks ``model`` (through ``session``) for each action.

    ``template`` is the prompt template's name; ``params`` are extra request parameters
    (``temperature``, ``seed``…) for this agent's calls. :meth:`call_records` holds every
    call this agent made, failed ones included.
    """

    def __init__(
        self,
        name: str,
        model: str,
        session: LLMSession,
        *,
        template: str = ACTION_TEMPLATE,
        params: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.session = session
        self.template = template
        self.params = dict(params or {})
        self._calls: list[LLMCall] = []

    @property
    def name(self) -> str:
        return self._name

    def prompt_variables(self, turn: AgentTurn) -> dict[str, object]:
        """The template variables for ``turn`` (see ``prompts/agent_action.j2``)."""
        return {
            "agent_name": self._name,
            "turn_number": turn.turn_number,
            "background": turn.background.to_natural_language(),
            "transcript": turn.transcript,
            "available_actions": list(turn.available_actions),
            "recipients": [p for p in turn.participants if p != self._name],
        }

    async def act(self, turn: AgentTurn) -> AgentAction:
        """The model's action for ``turn``.

        Raises :class:`~sotopia_are.llm.GenerationError` when no answer validated within
        the session's ``output_attempts``, and the LLM layer's other errors as they come;
        the failed call is in :meth:`call_records` either way.
        """
        if turn.agent_name != self._name:
            raise ValueError(f"agent {self._name!r} was given the turn of {turn.agent_name!r}")
        output_type = action_output_type(
            self._name, tuple(turn.participants), tuple(turn.available_actions)
        )
        try:
            generation = await self.session.generate(
                self.model,
                self.template,
                self.prompt_variables(turn),
                output_type,
                params=self.params or None,
            )
        except LLMError as error:
            if error.call is not None:
                self._calls.append(error.call)
            raise
        self._calls.append(generation.call)
        return AgentAction.model_validate(
            generation.value.model_dump(),
            context={"agent_names": list(turn.participants), "sender": self._name},
        )

    def call_records(self) -> Sequence[LLMCall]:
        """Every call this agent made, in order (failed calls included)."""
        return list(self._calls)
