"""Rule-based termination: Sotopia's ``RuleBasedTerminatedEvaluator``.

An episode ends when it has run ``max_turn_number`` turns, when fewer than two
participants are still in it (the others left), or when the last ``max_stale_turn + 1``
actions in a row were "did nothing". The same object is checked after every turn of a
running episode and can be applied to any finished episode or parsed script.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from sotopia_are.messages import AgentAction, Message

__all__ = ["RuleBasedTerminatedEvaluator", "SotopiaEvaluatorOutput", "TerminationCheck"]

SotopiaEvaluatorOutput = list[tuple[str, tuple[tuple[str, int | float | bool], str]]]
"""What a Sotopia evaluator returns: ``(who, ((key, value), reasoning))`` entries."""


class TerminationCheck(BaseModel):
    """Whether the episode should end, and every rule that says so (empty when not)."""

    model_config = ConfigDict(frozen=True)

    terminated: bool
    reasons: tuple[str, ...] = ()

    @property
    def comment(self) -> str:
        """The reasons as one line (empty when the episode goes on)."""
        return "; ".join(self.reasons)


class RuleBasedTerminatedEvaluator:
    """Ends an episode that is too long, has too few participants left, or has gone stale.

    ``turn_number`` is the number of turns completed: with ``max_turn_number=20`` the
    episode ends after its 20th turn. A participant is active until its latest action is
    ``leave``. The episode is stale when more than ``max_stale_turn`` actions in a row,
    counted back from the latest, are ``none``.
    """

    def __init__(self, max_turn_number: int = 20, max_stale_turn: int = 2) -> None:
        if max_turn_number < 1:
            raise ValueError(f"max_turn_number must be at least 1, got {max_turn_number}")
        if max_stale_turn < 0:
            raise ValueError(f"max_stale_turn must be at least 0, got {max_stale_turn}")
        self.max_turn_number = max_turn_number
        self.max_stale_turn = max_stale_turn

    def __repr__(self) -> str:
        return (
            f"RuleBasedTerminatedEvaluator(max_turn_number={self.max_turn_number}, "
            f"max_stale_turn={self.max_stale_turn})"
        )

    def check(
        self,
        turn_number: int,
        actions: Sequence[tuple[str, AgentAction]],
        participants: Sequence[str] | None = None,
    ) -> TerminationCheck:
        """Apply the three rules to the ``(speaker, action)`` pairs so far, oldest first.

        ``participants`` are everyone in the episode; without them, the speakers seen in
        ``actions`` stand in for them and the too-few rule needs someone to have left.
        """
        reasons: list[str] = []
        if turn_number >= self.max_turn_number:
            reasons.append(
                f"the conversation is too long ({turn_number} turns; the limit is "
                f"{self.max_turn_number})"
            )
        latest: dict[str, AgentAction] = {}
        for speaker, action in actions:
            latest[speaker] = action
        everyone = list(participants) if participants is not None else list(latest)
        active = [name for name in everyone if _still_in(latest.get(name))]
        # Without the participant list, someone who has not spoken yet is unknown, so
        # only a departure can show that too few remain.
        if len(active) < 2 and (participants is not None or len(active) < len(everyone)):
            reasons.append(
                f"too few active agents ({len(active)} of {len(everyone)} "
                "have not left the conversation)"
            )
        stale = 0
        for _speaker, action in reversed(actions):
            if action.action_type != "none":
                break
            stale += 1
        if stale > self.max_stale_turn:
            reasons.append(
                f"the conversation is stale ({stale} actions in a row did nothing; "
                f"at most {self.max_stale_turn} are allowed)"
            )
        return TerminationCheck(terminated=bool(reasons), reasons=tuple(reasons))

    def __call__(
        self, turn_number: int, messages: Sequence[tuple[str, Message]]
    ) -> SotopiaEvaluatorOutput:
        """Sotopia's evaluator call: ``("environment", (("terminated", bool), reasons))``.

        Entries from ``"Environment"`` (observations) are skipped, as in Sotopia.
        """
        actions = [
            (sender, message)
            for sender, message in messages
            if sender != "Environment" and isinstance(message, AgentAction)
        ]
        result = self.check(turn_number, actions)
        return [("environment", (("terminated", result.terminated), result.comment))]

    async def __acall__(
        self, turn_number: int, messages: Sequence[tuple[str, Message]]
    ) -> SotopiaEvaluatorOutput:
        """The same as calling the evaluator; for Sotopia's async evaluator interface."""
        return self(turn_number, messages)


def _still_in(latest: AgentAction | None) -> bool:
    return latest is None or latest.action_type != "leave"
