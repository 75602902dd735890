"""The script-writing mode: one model writes the whole interaction, the kernel replays it.

:class:`ScriptWritingAgent` asks its model, with the template ``script_writing.j2`` and the
full (omniscient) background, for a :class:`ScriptInteraction`. The script must parse
with :func:`parse_script` by the participants' names and hold at most ``max_turns``
actions; a :class:`ScriptParseError` (with its line number) is fed back to the model by
the LLM layer's retry, and a final failure raises :class:`GenerationError` carrying the
recorded call. The result, :class:`WrittenScript`, gives the :class:`ScriptedAgent`\\ s and
the episode spec that replay it through the social runner::

    written = await write_script(spec, "gpt-4o-mini", session)
    result = await run_episode(written.replay_spec(spec), written.agents())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from pydantic import Field, JsonValue, ValidationInfo, create_model, field_validator

from sotopia_are.llm import LLMCall, LLMSession, text_max_chars
from sotopia_are.messages import ScriptAction, ScriptBackground, ScriptInteraction, parse_script
from sotopia_are.social.replay import script_spec
from sotopia_are.social.spec import EpisodeSpec

from .scripted_agent import OnExhausted, ScriptedAgent

__all__ = [
    "SCRIPT_FORM_TOKENS",
    "SCRIPT_MAX_TOKENS",
    "SCRIPT_TEMPLATE",
    "ScriptWritingAgent",
    "WrittenScript",
    "script_output_type",
    "write_script",
]

SCRIPT_TEMPLATE = "script_writing.j2"
"""The default prompt template of :class:`ScriptWritingAgent` (in ``prompts/``)."""

SCRIPT_MAX_TOKENS = 4096
"""The answer budget of a whole written script unless ``params`` or the session's config
give one."""

SCRIPT_FORM_TOKENS = 20
"""What a script's JSON takes beside its text: ``{"interactions": ""}`` and white space."""

_BOUNDED_SCRIPT = Field(
    description=ScriptInteraction.model_fields["interactions"].description,
    # In the schema only (see text_max_chars): a script decoded under it closes its JSON
    # within SCRIPT_MAX_TOKENS; a longer one from a server that does not enforce it is read.
    json_schema_extra={"maxLength": text_max_chars(SCRIPT_MAX_TOKENS - SCRIPT_FORM_TOKENS)},
)


class _ScriptReply(ScriptInteraction):
    """A written script as a model answers it."""

    # Left aside when a smaller max_tokens cuts the script's bound (llm.structured).
    answer_form_tokens: ClassVar[int] = SCRIPT_FORM_TOKENS


_DEFAULT_MAX_TURNS = 20  # Sotopia's episode length


# Cached for the same reason as the agent's action type: building a model is slow.
@lru_cache(maxsize=256)
def script_output_type(agent_names: tuple[str, ...], max_turns: int) -> type[ScriptInteraction]:
    """A :class:`ScriptInteraction` subclass whose ``interactions`` must parse by
    ``agent_names`` into between 1 and ``max_turns`` actions.

    The one output type whose content is more than its JSON schema states (a script that
    parses), so a schema-true answer may still be sent back with its parse error.
    """

    def check_script(value: str, _info: ValidationInfo) -> str:
        actions = parse_script(value, agent_names)  # ScriptParseError is a ValueError
        if len(actions) > max_turns:
            raise ValueError(
                f"the script has {len(actions)} actions; write at most {max_turns} turns"
            )
        return value

    return create_model(
        "ScriptInteraction",
        __base__=_ScriptReply,
        interactions=(str, _BOUNDED_SCRIPT),
        __validators__={"check_script": field_validator("interactions")(check_script)},
    )


@dataclass(frozen=True)
class WrittenScript:
    """A script a model wrote, parsed, with the call that produced it."""

    script: ScriptInteraction
    actions: tuple[ScriptAction, ...]
    agent_names: tuple[str, ...]
    call: LLMCall

    def agents(
        self, *, by_turn: bool = False, on_exhausted: OnExhausted = "raise"
    ) -> dict[str, ScriptedAgent]:
        """One :class:`ScriptedAgent` per participant (see :meth:`ScriptedAgent.from_script`)."""
        return ScriptedAgent.from_script(
            self.actions, self.agent_names, by_turn=by_turn, on_exhausted=on_exhausted
        )

    def replay_spec(self, spec: EpisodeSpec) -> EpisodeSpec:
        """``spec`` set up to replay this script with :meth:`agents` (in order), by
        :func:`sotopia_are.social.replay.script_spec`: one turn per action, in the
        script's speaker order, ending with the script."""
        if tuple(spec.agent_names) != self.agent_names:
            raise ValueError(
                f"the script's participants {list(self.agent_names)} are not the spec's "
                f"{spec.agent_names}"
            )
        return script_spec(spec, self.script)

    def call_records(self) -> Sequence[LLMCall]:
        """The model call that wrote the script (one call; its retries are attempts)."""
        return (self.call,)


class ScriptWritingAgent:
    """Writes whole interactions with ``model``, through its own ``session.scoped(scope)``.

    ``max_turns`` bounds the script's length when the background is a bare
    :class:`ScriptBackground` (an :class:`EpisodeSpec` brings its own ``max_turns``).
    The script for an :class:`EpisodeSpec` is written in the scope of its episode id
    (under ``scope``, if given), so a replay gives each episode back its own script.
    :meth:`call_records` holds every call made, failed ones included.
    """

    def __init__(
        self,
        model: str,
        session: LLMSession,
        *,
        scope: str | None = None,
        template: str = SCRIPT_TEMPLATE,
        max_turns: int = _DEFAULT_MAX_TURNS,
        params: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self.model = model
        self.session = session.scoped(scope)
        self.template = template
        self.max_turns = max_turns
        self.params = dict(params or {})

    async def write(self, context: EpisodeSpec | ScriptBackground) -> WrittenScript:
        """The script of an interaction in ``context`` (every participant's goal shown).

        Raises :class:`~sotopia_are.llm.GenerationError` when no answer parsed within the
        session's ``output_attempts``; the failed call is in :meth:`call_records`.
        """
        if isinstance(context, EpisodeSpec):
            background, max_turns = context.background(), context.max_turns
            session = self.session.scoped(context.episode_id)
        else:
            background, max_turns, session = context, self.max_turns, self.session
        names = tuple(background.agent_names)
        generation = await session.generate(
            self.model,
            self.template,
            {
                "background": background.to_natural_language(),
                "agent_names": list(names),
                "max_turns": max_turns,
            },
            script_output_type(names, max_turns),
            params=self.params or None,
            max_tokens=SCRIPT_MAX_TOKENS,
        )
        script = ScriptInteraction(interactions=generation.value.interactions)
        return WrittenScript(
            script=script,
            actions=tuple(script.actions(names)),
            agent_names=names,
            call=generation.call,
        )

    def call_records(self) -> Sequence[LLMCall]:
        """Every call this writer made, in order (failed calls included)."""
        return self.session.calls


async def write_script(
    context: EpisodeSpec | ScriptBackground,
    model: str,
    session: LLMSession,
    *,
    template: str = SCRIPT_TEMPLATE,
    max_turns: int = _DEFAULT_MAX_TURNS,
) -> WrittenScript:
    """One script by a fresh :class:`ScriptWritingAgent` (see :meth:`ScriptWritingAgent.write`);
    the call record is :attr:`WrittenScript.call`, or ``.call`` of the raised error."""
    writer = ScriptWritingAgent(model, session, template=template, max_turns=max_turns)
    return await writer.write(context)
