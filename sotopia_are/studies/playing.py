"""`play_episode`: the one place an episode is played, whatever it is.

A spec with ``game`` rules is played by its rules (:func:`sotopia_are.games.run_game`),
any other by the conversation runner (:func:`sotopia_are.social.run_episode`): the verbs,
the batch workers and the cluster all play through here, so a game goes wherever an
episode goes. :func:`free_judges` are the judges a played episode gets without being
asked: a game's rules judge, whose outcome verdict costs no model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sotopia_are.record import RecordJudge
from sotopia_are.social import EpisodeResult, EpisodeSpec, Sink, SocialAgent, run_episode

__all__ = ["free_judges", "play_episode"]


async def play_episode(
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    *,
    sinks: Sequence[Sink] = (),
) -> EpisodeResult:
    """Play ``spec`` with ``agents`` (one per name in ``spec.agent_names``), ``sinks``
    told of every event: a game by its rules (its result a
    :class:`~sotopia_are.games.GameResult`), a conversation by the runner."""
    if spec.game is not None:
        # The games' modules load with the first game: a conversation's batch needs
        # none of them (some 45 M instructions of its driver's start). A batch's workers
        # find them loaded before they fork (see studies.workers).
        from sotopia_are.games import run_game

        return await run_game(spec, agents, sinks=sinks)
    return await run_episode(spec, agents, sinks=sinks)


def free_judges(spec: EpisodeSpec) -> list[RecordJudge]:
    """The judges that rate a complete episode of ``spec`` whatever else is asked: a
    game's :class:`~sotopia_are.games.GameJudge` (no model call); none for a
    conversation."""
    if spec.game is None:
        return []
    from sotopia_are.games import GameJudge

    return [GameJudge()]
