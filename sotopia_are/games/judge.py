"""`GameJudge`: the rule-based game judge — a finished game's outcome as a verdict.

No model is called: the verdict is computed from the record's events alone
(:func:`outcome_of` folds the game over the moves of its log), so rating a game again, on
an imported copy or in another process, gives an equal verdict, and the outcome is never
kept anywhere but in the log it is derived from. The verdict sits in
``record.verdicts`` beside any SOTOPIA-Eval verdict, under its own key (judge
:data:`GAME_JUDGE_MODEL`, rubric :data:`OUTCOME_RUBRIC`, prompt :data:`OUTCOME_VERSION`),
so every reader of verdicts — listings, ``show``, exports, reports, the viewer, training
data — reads it as it reads a judge's.

Each player gets one :class:`~sotopia_are.evaluation.AgentRating` with two dimensions:
``won`` (1 if its team is among the winners, else 0; range 0..1) and ``payoff`` (what it
got, within the lowest and highest payoff the rules allow its role,
:func:`payoff_range`). Its ``overall`` is, as in every verdict, the mean of its dimension
means; read ``won`` and ``payoff`` rather than that mean.
"""

from __future__ import annotations

from sotopia_are.evaluation import AgentRating, DimensionScore, Evaluation, JudgeFailure
from sotopia_are.record import EpisodeRecord, Verdict, check_ratable
from sotopia_are.social import GameRules, Role

from .outcome import GameOutcome, PlayerOutcome
from .replay import outcome_of
from .spec import rules_of

__all__ = [
    "GAME_JUDGE_MODEL",
    "OUTCOME_RUBRIC",
    "OUTCOME_VERSION",
    "GameJudge",
    "outcome_verdict",
    "payoff_range",
]

GAME_JUDGE_MODEL = "rules"
"""The ``judge_model`` of an outcome verdict: the game's rules, not a model."""

OUTCOME_RUBRIC = "game-outcome"
"""The ``rubric`` of an outcome verdict (dimensions ``won`` and ``payoff``)."""

OUTCOME_VERSION = "outcome@1"
"""The ``prompt`` of an outcome verdict: there is none, so it names the version of how
the verdict is computed (a change to it is a new judge, as a changed prompt is)."""


class GameJudge:
    """The rule-based judge of games (a :class:`~sotopia_are.record.RecordJudge`): give it
    to :func:`~sotopia_are.studies.arate` or
    :func:`~sotopia_are.record.give_verdict` as any judge. A played game gets its verdict
    without asking (:func:`~sotopia_are.studies.arun`); this rates a stored or imported
    one again.

    Example:
        ```python
        record = await sa.arate(store.load(game_id), GameJudge(), replace=True)
        record.verdict_of("rules").scores["Ada"]   # {"won": 1.0, "payoff": 1.0, ...}
        ```
    """

    model = GAME_JUDGE_MODEL
    verdict_key = Verdict.key_of(GAME_JUDGE_MODEL, OUTCOME_RUBRIC, OUTCOME_VERSION)

    def __repr__(self) -> str:
        return "GameJudge()"

    async def verdict(self, record: EpisodeRecord) -> Verdict:
        """:func:`outcome_verdict` of ``record``."""
        return outcome_verdict(record)


def outcome_verdict(record: EpisodeRecord) -> Verdict:
    """The outcome verdict of the finished game ``record`` (see the module). A log that is
    not a finished game of its spec (an imported file edited by hand) gives a verdict
    without ratings whose failure says why, as a judge that cannot rate does.
    :class:`~sotopia_are.record.NotRatableError` for a game that did not complete;
    ValueError for a conversation."""
    rules = rules_of(record.spec)
    check_ratable(record)
    names = list(record.spec.agent_names)
    try:
        outcome = outcome_of(record.spec, record.entries)
    except ValueError as error:
        failure = JudgeFailure(sample=0, error_type="ValueError", error=str(error))
        return _verdict(names, [], [failure], "")
    ratings = [_rating(rules, outcome, row) for row in outcome.players]
    return _verdict(names, ratings, [], outcome.reason)


def payoff_range(rules: GameRules, role: Role) -> tuple[int, int]:
    """The lowest and highest payoff ``rules`` allow ``role``: ``no_deal`` (the cycle
    bound can always end a game), ``win`` and ``lose`` when an end condition other than a
    deal can hold, and ``base + per_unit * amount`` at either bound of every offer. A
    role whose payoffs are all one value gets that value and the next (a dimension's range
    is never empty)."""
    payoff = role.payoff
    values = [payoff.no_deal]
    if any(end.when != "deal" for end in rules.ends):
        values += [payoff.win, payoff.lose]
    for phase in rules.phases:
        for action in phase.actions:
            if action.kind == "offer":
                values += [
                    payoff.base + payoff.per_unit * amount
                    for amount in (action.amount_min, action.amount_max)
                ]
    low, high = min(values), max(values)
    return low, max(high, low + 1)


def _rating(rules: GameRules, outcome: GameOutcome, row: PlayerOutcome) -> AgentRating:
    role = rules.role(row.role)
    low, high = payoff_range(rules, role)
    winners = ", ".join(outcome.winners) or "nobody"
    won = DimensionScore.of(
        "won",
        0,
        1,
        [int(row.won)],
        [f"{row.role} of team {row.team}; {outcome.reason} (winners: {winners})"],
    )
    paid = DimensionScore.of("payoff", low, high, [row.payoff], [_payoff_reason(outcome, row)])
    return AgentRating.of(row.name, [won, paid])


def _payoff_reason(outcome: GameOutcome, row: PlayerOutcome) -> str:
    if outcome.deal is not None:
        return f"{row.payoff} from the deal at {outcome.deal}"
    if outcome.ended_by == "cycle_limit":
        return f"{row.payoff}: the game ended without a deal or a winner"
    return f"{row.payoff} for {'winning' if row.won else 'losing'}"


def _verdict(
    names: list[str], ratings: list[AgentRating], failures: list[JudgeFailure], reason: str
) -> Verdict:
    evaluation = Evaluation(
        rubric=OUTCOME_RUBRIC,
        model=GAME_JUDGE_MODEL,
        agent_names=names,
        samples=1,
        valid_samples=1 if ratings else 0,
        ratings=ratings,
        failures=failures,
    )
    return Verdict(
        judge_model=GAME_JUDGE_MODEL,
        rubric=OUTCOME_RUBRIC,
        prompt=OUTCOME_VERSION,
        evaluation=evaluation,
        termination_reason=reason or None,
    )
