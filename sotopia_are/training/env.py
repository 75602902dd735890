"""`ParallelSocialEnv`: an episode as a PettingZoo ``ParallelEnv``, for RL loops.

The episode is played by the social runner itself (same kernel, visibility, turn-taking
and termination as any episode); the env only inverts control. Each agent the caller
plays is a stand-in whose ``act`` waits for the caller's action: :meth:`astep` hands the
actions to the waiting stand-ins, then lets the episode run — other agents (LLM, scripted)
acting on their own — until the caller's agents are asked again or the episode ends.
The observations come from the event log through the one visibility function, so an
agent never observes another's private action. At the end the judge rates the episode:
each agent's reward is a weighted sum of its scores (plus an optional per-turn reward),
and the episode is an :class:`~sotopia_are.record.EpisodeRecord` — streamed to the store
as it is played when one is given, like any other.

A game (a spec with ``game`` set) is played by :func:`~sotopia_are.games.run_game` instead,
in PettingZoo's ``action_mask`` convention: each observation is ``{"observation": {...,
"phase", "legal_moves"}, "action_mask": int8 array}`` over one fixed table of move choices
(:mod:`~sotopia_are.training.game_spaces` documents the encoding) and the action space is
``Discrete(len(env.move_choices))``. A move that is not legal now is refused with the
game's reason (:class:`~.game_spaces.IllegalMoveError`, nothing played, the agent still
to act). At the end each agent's reward is a weighted sum of its outcome scores —
``won`` (1 or 0), ``payoff`` and ``alive`` (1 or 0), from
:func:`~sotopia_are.games.outcome_of` over the log — and of the judge's scores when one is
given (default weights :data:`DEFAULT_GAME_REWARD_WEIGHTS`). The game's own bound
(``max_cycles``) ends it by its rules: agents are terminated then, never truncated. An
eliminated agent stays in ``agents`` until the end (``infos[agent]["alive"]`` is False, its
mask all 0) and is terminated with the rest, when its reward is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from sotopia_are.evaluation import LLMJudge
from sotopia_are.games import run_game
from sotopia_are.llm import LLMCall, Sampling
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.record import EpisodeRecord, give_verdict, record_of_result
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import (
    AgentTurn,
    ConversationApp,
    EpisodeResult,
    EpisodeSpec,
    EpisodeStatus,
    EpisodeViews,
    SocialAgent,
    run_episode,
)
from sotopia_are.storage import EpisodeRecorder, EpisodeStore, StorageError

from .game_rewards import (
    DEFAULT_GAME_REWARD_WEIGHTS,
    OUTCOME_SCORES,
    finished_outcome,
    game_reward,
)
from .game_spaces import (
    MoveChoice,
    action_mask,
    game_action_space,
    game_observation_space,
    legal_moves_text,
    move_choices,
    move_of,
)
from .spaces import action_of, action_space_for, observation_space_for

__all__ = [
    "DEFAULT_REWARD_WEIGHTS",
    "OtherAgent",
    "ParallelSocialEnv",
    "TurnReward",
]

DEFAULT_REWARD_WEIGHTS: Mapping[str, float] = {"overall_score": 1.0}
"""The end-of-episode reward unless told otherwise: the judge's overall score (Sotopia's)."""

OtherAgent = Callable[[EpisodeSpec], SocialAgent]
"""Makes one agent the env plays itself (LLM, scripted), afresh for each episode."""

TurnReward = Callable[[str, AgentTurn, AgentAction | GameMove], float]
"""A per-turn reward: ``(agent, the turn it was shown, the action it took) -> reward`` (in
a game the action is the :class:`GameMove` it made)."""

Observation = dict[str, Any]
_T = TypeVar("_T")


@dataclass
class _Request:
    turn: AgentTurn
    answer: asyncio.Future[AgentAction | GameMove]


class _Stand:
    """A caller's agent inside the runner: its ``act`` waits for the caller's action."""

    def __init__(self, name: str, requests: dict[str, _Request], asked: asyncio.Event) -> None:
        self._name = name
        self._requests = requests
        self._asked = asked

    @property
    def name(self) -> str:
        return self._name

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove:
        answer: asyncio.Future[AgentAction | GameMove] = asyncio.get_running_loop().create_future()
        self._requests[self._name] = _Request(turn, answer)
        self._asked.set()
        return await answer

    def call_records(self) -> Sequence[LLMCall]:
        return ()


class _Episode:
    """One episode being played: the runner's task, the caller's pending turns, and every
    participant's view (fed by the runner as events complete)."""

    def __init__(self, spec: EpisodeSpec) -> None:
        self.spec = spec
        self.requests: dict[str, _Request] = {}
        self.asked = asyncio.Event()
        app = ConversationApp(spec.agent_names)
        self.views = EpisodeViews(spec, app.name, BaseNotificationSystem(app.notification_config()))
        self.left: set[str] = set()
        self.task: asyncio.Task[EpisodeResult] | None = None

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        seen = len(self.views.entries)
        self.views.add(event)
        if event.function_name() == "eliminate" and not event.failed():
            self.left.add(str(event.get_args()["participant"]))
        for entry in self.views.entries[seen:]:
            if entry.action is not None and entry.action.action_type == "leave":
                self.left.add(entry.sender)

    def current_turn(self) -> int:
        """The turn being played, or once the episode is over the number of turns played."""
        for request in self.requests.values():
            return request.turn.turn_number
        assert self.task is not None
        return self.task.result().turns_played if self.task.done() else 0

    async def until_asked_or_over(self) -> None:
        """Wait until the runner asks a caller's agent to act, or the episode ends.

        The actors of a turn are asked together (the runner gathers them), and each
        stand-in registers before its first await, so by the time this wakes every actor
        of the turn has registered.
        """
        assert self.task is not None
        while not self.requests and not self.task.done():
            self.asked.clear()
            waiter = asyncio.ensure_future(self.asked.wait())
            try:
                await asyncio.wait({self.task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()


class ParallelSocialEnv(ParallelEnv):  # type: ignore[misc]  # pettingzoo is untyped
    """``spec``'s episode as a PettingZoo parallel env, one episode per :meth:`reset`.

    ``others`` maps the participants the env plays itself to a factory of a fresh agent
    per episode (e.g. ``lambda spec: LLMAgent("Bob", model, session.scoped(
    spec.episode_id))``); every other participant is the caller's (``possible_agents``).
    Each :meth:`step` takes the actions of the agents whose ``available_actions`` are set
    (the others' are ignored, as in Sotopia's env): an :class:`AgentAction`, its JSON
    text, or a sample of :meth:`action_space`. ``judge`` rates the finished episode and
    each agent's last reward is ``sum(weight * score)`` over ``reward_weights`` (default
    the overall score); without a judge it is 0. ``turn_reward`` adds a reward to each
    step in which an agent acted. With a ``store``, the episode is stored as it is
    played, with ``tag``; ``models`` labels the caller's agents' policy in the record.

    On a game (``spec.game`` set; see the module) the actions are choices of
    :attr:`move_choices` (or :class:`GameMove` s), each observation carries its
    ``action_mask``, and ``reward_weights`` (default :data:`DEFAULT_GAME_REWARD_WEIGHTS`)
    may name the :data:`OUTCOME_SCORES` as well as the judge's dimensions; the judge is
    optional there.
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "sotopia_are_social_v0", "render_modes": ["ansi"]}

    def __init__(
        self,
        spec: EpisodeSpec,
        *,
        others: Mapping[str, OtherAgent] | None = None,
        judge: LLMJudge | None = None,
        reward_weights: Mapping[str, float] | None = None,
        turn_reward: TurnReward | None = None,
        store: EpisodeStore | None = None,
        tag: str = "env",
        models: Mapping[str, str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.spec = spec
        self.others = dict(others or {})
        unknown = sorted(set(self.others) - set(spec.agent_names))
        if unknown:
            raise ValueError(f"others {unknown} are not participants of {spec.agent_names}")
        self.possible_agents: list[str] = [n for n in spec.agent_names if n not in self.others]
        if not self.possible_agents:
            raise ValueError("the env plays every participant itself: leave one to the caller")
        self.agents: list[str] = []
        self.judge = judge
        self.is_game = spec.game is not None
        default = DEFAULT_GAME_REWARD_WEIGHTS if self.is_game else DEFAULT_REWARD_WEIGHTS
        self.reward_weights = dict(default if reward_weights is None else reward_weights)
        if judge is not None or self.is_game:
            known = [*OUTCOME_SCORES] if self.is_game else []
            if judge is not None:
                known += [*judge.rubric.dimension_names, "overall_score"]
            wrong = sorted(set(self.reward_weights) - set(known))
            if wrong:
                raise ValueError(
                    f"reward_weights name {wrong}, which are not scored (scored: {known})"
                )
        self.turn_reward = turn_reward
        self.store = store
        self.tag = tag
        self.models = dict(models or {})
        self.render_mode = render_mode
        self.record: EpisodeRecord | None = None
        """The last finished episode's record (None until one finishes)."""
        self._episode: _Episode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._episode_loop: asyncio.AbstractEventLoop | None = None
        self._observed: set[str] = set()
        self._cast: dict[str, SocialAgent] = {}
        self.move_choices: tuple[MoveChoice, ...] = move_choices(spec) if self.is_game else ()
        """A game's table of move choices: what an action index and a mask entry mean."""
        self._observation_spaces: dict[str, spaces.Dict] = {}
        self._action_spaces: dict[str, spaces.Space[Any]] = {}
        for name in self.possible_agents:
            if self.is_game:
                self._observation_spaces[name] = game_observation_space(spec, self.move_choices)
                self._action_spaces[name] = game_action_space(self.move_choices)
            else:
                self._observation_spaces[name] = observation_space_for(
                    spec.action_types, spec.max_turns
                )
                self._action_spaces[name] = action_space_for(
                    spec.action_types, self.recipients(name)
                )

    # -- spaces ------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Dict:
        """``agent``'s observation space (see :func:`~.spaces.observation_space_for`),
        the same object each time (PettingZoo seeds it)."""
        return self._observation_spaces[self._checked(agent)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """``agent``'s action space: in a conversation a ``Dict`` whose ``to`` flags
        :meth:`recipients` in order; in a game ``Discrete`` over :attr:`move_choices`."""
        return self._action_spaces[self._checked(agent)]

    def recipients(self, agent: str) -> list[str]:
        """Whom ``agent`` may address privately, in the order of its ``to`` mask."""
        return [name for name in self.spec.agent_names if name != agent]

    # -- synchronous API ---------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Observation], dict[str, dict[str, Any]]]:
        """Start a new episode (abandoning one still running, stored as ``incomplete``).

        ``seed`` replaces the spec's (turn order, apps); ``options["episode_id"]`` names
        the episode (default: the spec's name, else its id, and a random suffix; the
        record's ``scenario_id`` is that name or id); other options are
        ignored. Observations and infos of every agent; ``infos[agent]["turn"]`` is the
        :class:`AgentTurn` of an agent due to act (what an LLM agent would be shown).
        """
        return self._run(self.areset(seed=seed, options=options))

    def step(
        self, actions: Mapping[str, object]
    ) -> tuple[
        dict[str, Observation],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Play the actions of the agents due to act and run the episode on to the next
        turn of one of the caller's agents, or its end. ``ValueError`` (nothing played)
        for a missing or invalid action of an agent due to act."""
        return self._run(self.astep(actions))

    def close(self) -> None:
        """Abandon a running episode (stored as ``incomplete``) and free the event loop."""
        if self._episode is not None and self._episode_loop is not None:
            if self._episode_loop is self._loop:
                self._run(self._abandon("the env was closed before the episode ended"))
            elif not self._episode_loop.is_closed():
                raise RuntimeError("close the env on its event loop: await env.aclose()")
        if self._loop is not None:
            loop, self._loop = self._loop, None
            # As asyncio.run ends: what the model clients left running (litellm's logging
            # worker) is cancelled and awaited before the loop closes.
            loop.run_until_complete(_cancel_the_rest())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    @property
    def _scenario_id(self) -> str:
        return self.spec.name or self.spec.episode_id

    def render(self) -> str | None:
        """The omniscient transcript so far (``render_mode="ansi"``), else None."""
        if self.render_mode != "ansi" or self._episode is None:
            return None
        return self._episode.views.transcript()

    # -- asyncio API -------------------------------------------------------------------

    async def areset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Observation], dict[str, dict[str, Any]]]:
        """:meth:`reset` inside a running event loop."""
        await self._abandon("the env was reset before the episode ended")
        options = options or {}
        changes: dict[str, Any] = {
            "episode_id": options.get("episode_id")
            or f"{self._scenario_id}-{uuid.uuid4().hex[:12]}"
        }
        if seed is not None:
            changes["seed"] = seed
        spec = self.spec.replace(**changes)
        episode = _Episode(spec)
        cast: dict[str, SocialAgent] = {
            name: _Stand(name, episode.requests, episode.asked) for name in self.possible_agents
        }
        for name, make in self.others.items():
            agent = make(spec)
            if agent.name != name:
                raise ValueError(f"the factory of {name!r} made an agent named {agent.name!r}")
            cast[name] = agent
        sinks: list[Any] = [episode]
        if self.store is not None:
            recorder = EpisodeRecorder(
                self.store, tag=self.tag, models=self._models(cast), sampling=_sampling(cast)
            )
            recorder.start(spec, scenario_id=self._scenario_id)
            sinks.append(recorder)
        self._episode_loop = asyncio.get_running_loop()
        self._cast = cast
        play = run_game if self.is_game else run_episode
        episode.task = asyncio.ensure_future(play(spec, cast, sinks=sinks))
        self._episode = episode
        self.record = None
        self._observed = set()
        self.agents = list(self.possible_agents)
        await episode.until_asked_or_over()
        return self._observations(), {name: self._info(name) for name in self.agents}

    async def astep(
        self, actions: Mapping[str, object]
    ) -> tuple[
        dict[str, Observation],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """:meth:`step` inside a running event loop (the one :meth:`areset` ran on)."""
        episode = self._live_episode()
        chosen = self._read_actions(episode, actions)
        rewards = dict.fromkeys(self.agents, 0.0)
        if self.turn_reward is not None:  # before playing anything: the hook may raise
            for name, action in chosen.items():
                rewards[name] += float(self.turn_reward(name, episode.requests[name].turn, action))
        for name, action in chosen.items():
            episode.requests.pop(name).answer.set_result(action)
        await episode.until_asked_or_over()
        live = list(self.agents)
        observations = self._observations()
        assert episode.task is not None
        over = episode.task.done()
        truncations = dict.fromkeys(live, False)
        # An eliminated player stays until the game ends (never asked, its mask all 0):
        # whether its team won, and so its reward, is known only then.
        terminations = {name: name in episode.left and not self.is_game for name in live}
        infos = {name: self._info(name) for name in live}
        if over:
            result = episode.task.result()
            record = await self._finish(result)
            truncated = (
                not self.is_game
                and result.status is EpisodeStatus.COMPLETE
                and result.turns_played >= episode.spec.max_turns
                and len(set(episode.spec.agent_names) - episode.left) >= 2
            )
            scores = record.scores
            outcome = finished_outcome(record) if self.is_game else None
            for name in live:
                terminations[name] = not truncated
                truncations[name] = truncated
                rated = scores.get(name)
                if self.is_game:
                    rewards[name] += game_reward(self.reward_weights, rated, outcome, name)
                    infos[name]["outcome"] = outcome
                else:
                    rewards[name] += self._final_reward(rated)
                infos[name].update(
                    status=record.status.value,
                    reason=record.reason,
                    rated=name in scores,
                    scores=scores.get(name, {}),
                    record=record,
                )
        self.agents = [n for n in live if not (terminations[n] or truncations[n])]
        return observations, rewards, terminations, truncations, infos

    async def aclose(self) -> None:
        """:meth:`close` inside the running event loop the episode runs on."""
        await self._abandon("the env was closed before the episode ended")

    # -- internals ---------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the env's own event loop (the synchronous API)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coroutine.close()
            raise RuntimeError(
                "ParallelSocialEnv's reset/step run their own event loop; inside a running "
                "one, await areset/astep"
            )
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coroutine)

    def _live_episode(self) -> _Episode:
        if self._episode is None or not self.agents:
            raise RuntimeError("no episode is running: call reset() first")
        if asyncio.get_running_loop() is not self._episode_loop:
            raise RuntimeError("step the env on the event loop its episode was reset on")
        return self._episode

    def _read_actions(
        self, episode: _Episode, actions: Mapping[str, object]
    ) -> dict[str, AgentAction | GameMove]:
        """The actions of the agents due to act, all checked before any is played."""
        missing = [name for name in episode.requests if name not in actions]
        if missing:
            raise ValueError(f"no action for {missing}, who must act in this turn")
        if self.is_game:
            return {
                name: move_of(
                    actions[name],
                    agent=name,
                    choices=self.move_choices,
                    options=episode.requests[name].turn.moves,
                )
                for name in episode.requests
            }
        return {
            name: action_of(
                actions[name],
                agent=name,
                participants=episode.spec.agent_names,
                action_types=episode.spec.action_types,
            )
            for name in episode.requests
        }

    def _observations(self) -> dict[str, Observation]:
        assert self._episode is not None
        episode = self._episode
        observations = {}
        turn = episode.current_turn()
        for name in self.agents:
            view = episode.views.agents[name]
            request = episode.requests.get(name)
            first = name not in self._observed
            self._observed.add(name)
            seen = {
                "background": view.background.to_natural_language(),
                "transcript": view.transcript(),
                "last_turn": view.background.to_natural_language() if first else view.new_lines(),
                "turn_number": turn,
            }
            view.mark_seen()
            if self.is_game:
                options = request.turn.moves if request is not None else ()
                observations[name] = {
                    "observation": {
                        **seen,
                        "phase": request.turn.phase if request is not None else "",
                        "legal_moves": legal_moves_text(options),
                    },
                    "action_mask": action_mask(self.move_choices, options),
                }
                continue
            observations[name] = {
                **seen,
                "available_actions": np.array(
                    [int(request is not None)] * len(episode.spec.action_types), dtype=np.int8
                ),
            }
        return observations

    def _info(self, name: str) -> dict[str, Any]:
        assert self._episode is not None
        request = self._episode.requests.get(name)
        info: dict[str, Any] = {
            "episode_id": self._episode.spec.episode_id,
            "turn": request.turn if request else None,
        }
        if self.is_game:
            info["alive"] = name not in self._episode.left
        return info

    async def _finish(self, result: EpisodeResult) -> EpisodeRecord:
        """The finished episode's record, rated by the judge (stored with its verdict)."""
        cast = self._cast
        record = record_of_result(
            result,
            models=self._models(cast),
            sampling=_sampling(cast),
            tag=self.tag,
            scenario_id=self._scenario_id,
        )
        if self.judge is not None and record.status is EpisodeStatus.COMPLETE:
            verdict = await give_verdict(record, self.judge)
            record = (
                self.store.add_verdict(record.episode_id, verdict, stored=record)
                if self.store is not None
                else record.with_verdict(verdict)
            )
        self.record = record
        self._episode = None
        return record

    def _final_reward(self, scores: Mapping[str, float] | None) -> float:
        if not scores:
            return 0.0
        return sum(weight * scores[name] for name, weight in self.reward_weights.items())

    async def _abandon(self, reason: str) -> None:
        """Stop a running episode; a stored one is marked ``incomplete`` with ``reason``."""
        episode, self._episode = self._episode, None
        self.agents = []
        if episode is None or episode.task is None:
            return
        if not episode.task.done():
            episode.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await episode.task
            if self.store is not None:
                # The store may no longer hold it as running (deleted meanwhile).
                with contextlib.suppress(StorageError):
                    self.store.mark_incomplete(episode.spec.episode_id, reason)

    def _models(self, cast: Mapping[str, SocialAgent]) -> dict[str, str]:
        """Each agent's model: an LLM agent's own, the caller's labels for theirs."""
        found = {name: getattr(agent, "model", "") for name, agent in cast.items()}
        return {name: str(self.models.get(name, found[name]) or "") for name in cast}

    def _checked(self, agent: str) -> str:
        if agent not in self.possible_agents:
            raise KeyError(f"{agent!r} is not one of the env's agents {self.possible_agents}")
        return agent


async def _cancel_the_rest() -> None:
    """Cancel every other task of the running loop and wait for them to end."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


def _sampling(cast: Mapping[str, SocialAgent]) -> dict[str, Sampling]:
    """The sampling of each agent that has one (an LLM agent), by name."""
    found = {name: getattr(agent, "sampling", None) for name, agent in cast.items()}
    return {name: sampling for name, sampling in found.items() if isinstance(sampling, Sampling)}
