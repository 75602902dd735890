"""`LLMAgent`: an episode participant whose every action is one structured model call.

The prompt is the template ``agent_action.j2`` rendered from the :class:`AgentTurn` alone
(so the agent can only ever say what the runner let it see). The answer is normalised in
form and must then be an :class:`AgentAction` whose type is one of the turn's available
actions and whose private recipients (``to``) are other participants (see
:mod:`sotopia_are.agents.action_reply`); anything else is fed back to the model by the
LLM layer's retry, and a final failure raises :class:`GenerationError` — it is never
turned into "did nothing".

A game turn (one whose ``moves`` are not empty) is asked with ``game_move.j2`` instead,
and its answer is a :class:`GameMove` among the legal moves: the schema sent offers only
those (see :mod:`sotopia_are.agents.game_move_reply`), and an illegal move that still
arrives is fed back in the same way.

An agent plays one episode and calls through its own scoped session, which holds its call
records (nothing else keeps a copy) and, in a recording, labels its calls so a replay
gives them back to it. :func:`llm_agents_for` makes an episode's agents under the
episode's scope — use it as (or in) the runner's ``make_agents``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sotopia_are.agents.action_reply import ACTION_MAX_TOKENS, action_output_type
from sotopia_are.agents.game_move_reply import move_output_type
from sotopia_are.llm import LLMCall, LLMSession, Sampling
from sotopia_are.llm.valid_parts import of_valid_fields
from sotopia_are.messages import AgentAction, GameMove, ScriptBackground
from sotopia_are.social.protocol import AgentTurn
from sotopia_are.social.spec import EpisodeSpec

__all__ = [
    "ACTION_MAX_TOKENS",
    "ACTION_TEMPLATE",
    "GAME_MOVE_TEMPLATE",
    "LLMAgent",
    "llm_agents_for",
]

ACTION_TEMPLATE = "agent_action.j2"
"""The default prompt template of :class:`LLMAgent` (in ``prompts/``)."""

GAME_MOVE_TEMPLATE = "game_move.j2"
"""The default prompt template of :class:`LLMAgent` in a game turn (in ``prompts/``)."""


class LLMAgent:
    """An agent that asks ``model`` for each action, in one episode.

    It calls through ``session.scoped(scope)`` (``scope`` defaults to the agent's name), so
    with an episode's session (``session.scoped(episode_id)``, or :func:`llm_agents_for`)
    its calls are scoped ``"<episode_id>/<name>"``. ``template`` is the prompt template's
    name, ``game_template`` that of a game turn (see :meth:`act`); ``sampling`` is sent
    with every request, over the session config's ``params`` (default ``Sampling()``: the
    provider's own settings; its ``max_tokens`` replaces
    :data:`ACTION_MAX_TOKENS`). With a sampling ``seed`` (a study's), each request sends
    the seed drawn from it, ``episode_seed`` (the episode's ``EpisodeSpec.seed``), the
    agent's name and the turn (``Sampling.params``), so the repeats of an episode differ
    and a rerun of it sends the same requests.
    :meth:`call_records` holds every call this agent made, failed ones included. Reusing
    the agent in another episode (a turn not after the last it played) is a ValueError,
    so no episode's records ever carry another's calls.
    """

    def __init__(
        self,
        name: str,
        model: str,
        session: LLMSession,
        *,
        scope: str | None = None,
        template: str = ACTION_TEMPLATE,
        game_template: str = GAME_MOVE_TEMPLATE,
        sampling: Sampling | None = None,
        episode_seed: int = 0,
    ) -> None:
        self._name = name
        self.model = model
        self.session = session.scoped(name if scope is None else scope)
        self.template = template
        self.game_template = game_template
        self.sampling = Sampling() if sampling is None else sampling
        # A sampling that sends nothing without a draw (no settings, seed or extra) sends
        # nothing with one: asked once, not for every turn.
        self._sends_params = bool(self.sampling.params())
        self.episode_seed = episode_seed
        self._last_turn: int | None = None
        self._background: tuple[ScriptBackground, str] | None = None

    @property
    def name(self) -> str:
        return self._name

    def prompt_variables(self, turn: AgentTurn) -> dict[str, object]:
        """The template variables for ``turn`` (see ``prompts/agent_action.j2``)."""
        return {
            "agent_name": self._name,
            "turn_number": turn.turn_number,
            "background": self._background_text(turn.background),
            "transcript": turn.transcript,
            "available_actions": list(turn.available_actions),
            "recipients": [p for p in turn.participants if p != self._name],
        }

    def game_prompt_variables(self, turn: AgentTurn) -> dict[str, object]:
        """The template variables of a game turn (see ``prompts/game_move.j2``)."""
        return {
            "agent_name": self._name,
            "turn_number": turn.turn_number,
            "phase": turn.phase,
            "background": self._background_text(turn.background),
            "transcript": turn.transcript,
            "moves": list(turn.moves),
        }

    def _background_text(self, background: ScriptBackground) -> str:
        """``background.to_natural_language()``, rendered once per episode: every turn of
        an episode shows this agent its view's one background object, which nothing
        changes."""
        if self._background is None or self._background[0] is not background:
            self._background = (background, background.to_natural_language())
        return self._background[1]

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove:
        """The model's action for ``turn``: in a game turn (``turn.moves`` not empty) a
        :class:`GameMove` making one of those moves, else an :class:`AgentAction`.

        Raises :class:`~sotopia_are.llm.GenerationError` when no answer validated within
        the session's ``output_attempts``, and the LLM layer's other errors as they come;
        the failed call is in :meth:`call_records` either way. ValueError for another
        agent's turn, or a turn not after the last one played (another episode's), or a
        game turn none of whose moves can be made.
        """
        if turn.agent_name != self._name:
            raise ValueError(f"agent {self._name!r} was given the turn of {turn.agent_name!r}")
        if self._last_turn is not None and turn.turn_number <= self._last_turn:
            raise ValueError(
                f"LLMAgent {self._name!r} plays one episode: it already played turn "
                f"{self._last_turn} and was given turn {turn.turn_number}; make new agents for "
                "each episode (llm_agents_for(spec, models, session))"
            )
        self._last_turn = turn.turn_number
        params = (
            self.sampling.params("agent", self.episode_seed, self._name, turn.turn_number)
            if self._sends_params
            else {}
        )
        if turn.moves:
            move_type = move_output_type(tuple(turn.moves), tuple(turn.participants))
            played = await self.session.generate(
                self.model,
                self.game_template,
                self.game_prompt_variables(turn),
                move_type,
                params=params,
                max_tokens=ACTION_MAX_TOKENS,
            )
            return GameMove.model_validate(played.value.model_dump())
        output_type = action_output_type(
            self._name, tuple(turn.participants), tuple(turn.available_actions)
        )
        generation = await self.session.generate(
            self.model,
            self.template,
            self.prompt_variables(turn),
            output_type,
            params=params,
            max_tokens=ACTION_MAX_TOKENS,
        )
        # The output type validated everything AgentAction checks, and with this turn's
        # participants and sender (see action_output_type): only its class changes. (Its
        # fields read from its dict: a pydantic model's attribute is looked up through its
        # class's __getattr__ hook, several times the cost.)
        chosen = generation.value.__dict__
        return of_valid_fields(
            AgentAction,
            {
                "action_type": chosen["action_type"],
                "argument": chosen["argument"],
                "to": chosen["to"],
            },
        )

    def call_records(self) -> Sequence[LLMCall]:
        """Every call this agent made, in order (failed calls included)."""
        return self.session.calls


def llm_agents_for(
    spec: EpisodeSpec,
    models: str | Mapping[str, str],
    session: LLMSession,
    *,
    template: str = ACTION_TEMPLATE,
    game_template: str = GAME_MOVE_TEMPLATE,
    sampling: Sampling | None = None,
) -> list[LLMAgent]:
    """One :class:`LLMAgent` per participant of ``spec``, in order, each calling through
    ``session.scoped(spec.episode_id)`` (so its calls are scoped ``"<episode_id>/<name>"``).

    ``models`` is one model for everyone or ``{participant: model}``; ValueError naming
    the participants without one. ``sampling`` is every agent's, each drawing its
    requests' seeds with the spec's ``seed`` (see :class:`LLMAgent`).
    Use it as the runner's agent factory::

        await run_episodes(specs, lambda spec: llm_agents_for(spec, models, session))
    """
    if isinstance(models, str):
        chosen = dict.fromkeys(spec.agent_names, models)
    else:
        missing = [name for name in spec.agent_names if name not in models]
        if missing:
            raise ValueError(
                f"episode {spec.episode_id!r}: no model for {missing}; give one model for "
                f"everyone or one per participant of {spec.agent_names}"
            )
        chosen = {name: models[name] for name in spec.agent_names}
    episode = session.scoped(spec.episode_id)
    return [
        LLMAgent(
            name,
            model,
            episode,
            template=template,
            game_template=game_template,
            sampling=sampling,
            episode_seed=spec.seed,
        )
        for name, model in chosen.items()
    ]
