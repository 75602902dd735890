"""Rule-based termination: Sotopia's ``RuleBasedTerminatedEvaluator``.

An episode ends when it has run ``max_turn_number`` turns, when fewer than two
participants are still in it (the others left), or when more than ``max_stale_turn``
turns in a row passed in which nobody did anything. The rules themselves are the social
runner's :class:`~sotopia_are.social.MaxTurnsAndStaleRule` (one implementation); this
evaluator applies them in the three places an evaluator is needed:

* inside a running episode — it is a :class:`~sotopia_are.social.TerminationRule`: pass
  it in ``run_episode(..., termination_rules=[evaluator])`` and the runner calls
  :meth:`~RuleBasedTerminatedEvaluator.check` before every turn;
* on a finished episode (:meth:`~RuleBasedTerminatedEvaluator.check_episode`) or on any
  list of actions such as a parsed script (:meth:`~RuleBasedTerminatedEvaluator.check_actions`);
  :func:`termination_check` checks a finished episode against its spec's own limits
  (:func:`~sotopia_are.social.default_rule`) unless given a rule;
* through Sotopia's evaluator call, ``evaluator(turn_number, messages)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from sotopia_are.messages import AgentAction, Message
from sotopia_are.social import (
    ConversationEntry,
    EpisodeSpec,
    EpisodeState,
    MaxTurnsAndStaleRule,
    TerminationRule,
    default_rule,
)

__all__ = [
    "PlayedEpisode",
    "RuleBasedTerminatedEvaluator",
    "SotopiaEvaluatorOutput",
    "TerminationCheck",
    "termination_check",
]

# Sotopia counts two active agents before any has acted; a stand-in for that pair.
_NOBODY_GONE = ("(first agent)", "(second agent)")

SotopiaEvaluatorOutput = list[tuple[str, tuple[tuple[str, int | float | bool], str]]]
"""What a Sotopia evaluator returns: ``(who, ((key, value), reasoning))`` entries."""


class PlayedEpisode(Protocol):
    """A played episode as the checks read it: an ``EpisodeResult`` or an
    ``EpisodeRecord``."""

    @property
    def spec(self) -> EpisodeSpec: ...

    @property
    def entries(self) -> list[ConversationEntry]: ...

    @property
    def turns_played(self) -> int: ...

    def actions(self) -> list[tuple[str, AgentAction]]: ...


class TerminationCheck(BaseModel):
    """Whether the episode should end, and why (``reason`` is None when it goes on)."""

    model_config = ConfigDict(frozen=True)

    reason: str | None = None

    @property
    def terminated(self) -> bool:
        """Whether a rule ends the episode."""
        return self.reason is not None


class RuleBasedTerminatedEvaluator:
    """Ends an episode that is too long, has too few participants left, or has gone stale.

    ``turn_number`` counts the turns played: with ``max_turn_number=20`` the episode ends
    after its 20th turn. A participant is active until it leaves. A turn is stale when
    every action in it is ``none``; more than ``max_stale_turn`` stale turns in a row end
    the episode.
    """

    def __init__(self, max_turn_number: int = 20, max_stale_turn: int = 2) -> None:
        if max_turn_number < 1:
            raise ValueError(f"max_turn_number must be at least 1, got {max_turn_number}")
        if max_stale_turn < 0:
            raise ValueError(f"max_stale_turn must be at least 0, got {max_stale_turn}")
        self.max_turn_number = max_turn_number
        self.max_stale_turn = max_stale_turn
        self._rule = MaxTurnsAndStaleRule(max_turn_number, max_stale_turn)

    def __repr__(self) -> str:
        return (
            f"RuleBasedTerminatedEvaluator(max_turn_number={self.max_turn_number}, "
            f"max_stale_turn={self.max_stale_turn})"
        )

    def check(self, state: EpisodeState) -> str | None:
        """The social runner's termination-rule call: the reason to stop now, or None."""
        return self._rule.check(state)

    def check_turns(
        self,
        turns: Sequence[Sequence[tuple[str, AgentAction]]],
        participants: Sequence[str],
    ) -> TerminationCheck:
        """Apply the rules after ``turns`` (each the ``(actor, action)`` pairs of one
        turn, oldest first) played by ``participants``."""
        return TerminationCheck(reason=self.check(EpisodeState.after(turns, participants)))

    def check_actions(
        self, actions: Sequence[tuple[str, AgentAction]], participants: Sequence[str]
    ) -> TerminationCheck:
        """Apply the rules to ``(speaker, action)`` pairs taken one per turn, as a parsed
        script replays (``[(a.speaker, a.action) for a in parse_script(...)]``)."""
        return self.check_turns([[pair] for pair in actions], participants)

    def check_episode(self, episode: PlayedEpisode) -> TerminationCheck:
        """Apply the rules to a finished episode, turn by turn as its log records them."""
        return termination_check(episode, self)

    def __call__(
        self, turn_number: int, messages: Sequence[tuple[str, Message]]
    ) -> SotopiaEvaluatorOutput:
        """Sotopia's evaluator call: ``[("environment", (("terminated", bool), reason))]``.

        ``messages`` is Sotopia's ``(sender, message)`` inbox, which holds every agent's
        action in every turn; as Sotopia does, entries from ``"Environment"`` are skipped,
        the senders seen are the participants, and the trailing "did nothing" actions
        are the stale turns.
        """
        actions = [
            (sender, message)
            for sender, message in messages
            if sender != "Environment" and isinstance(message, AgentAction)
        ]
        latest = dict(actions)
        stale = 0
        for _sender, action in reversed(actions):
            if action.action_type != "none":
                break
            stale += 1
        state = EpisodeState(
            turn_number=turn_number,
            participants=tuple(latest),
            active=tuple(n for n, a in latest.items() if a.action_type != "leave")
            if latest
            else _NOBODY_GONE,
            stale_turns=stale,
            last_turn=tuple(actions[-1:]),
            actions=actions,
        )
        reason = self.check(state)
        return [("environment", (("terminated", reason is not None), reason or ""))]

    async def __acall__(
        self, turn_number: int, messages: Sequence[tuple[str, Message]]
    ) -> SotopiaEvaluatorOutput:
        """The same as calling the evaluator; for Sotopia's async evaluator interface."""
        return self(turn_number, messages)


def termination_check(
    episode: PlayedEpisode, rule: TerminationRule | None = None
) -> TerminationCheck:
    """Whether ``rule`` ends the finished ``episode``, turn by turn as its log records
    them; ``rule`` defaults to the spec's own limits (:func:`~sotopia_are.social.default_rule`,
    the rule the runner plays by unless given others)."""
    turns: dict[int, list[tuple[str, AgentAction]]] = {}
    for entry in episode.entries:
        if entry.action is not None:
            turns.setdefault(entry.turn, []).append((entry.sender, entry.action))
    # A turn in which no agent acted (only outside events) still counts as played.
    played = [turns.get(number, []) for number in range(episode.turns_played)]
    state = EpisodeState.after(played, episode.spec.agent_names)
    return TerminationCheck(reason=(rule or default_rule(episode.spec)).check(state))
