"""A benchmark's report, rebuilt from the stored records alone.

Every episode of a benchmark (:func:`~sotopia_are.studies.benchmark`) has one agent played
by the model under test and the others by a partner model; its scenario id says which
(``<task>.tested<k>``: agent ``k``). :func:`benchmark_rows` reads one row per episode from
the store; :func:`report_of` sums them per model under test and partner: each dimension's
mean with a seeded 95% bootstrap interval over episodes, wins, ties and losses against the
partner, the judge's failures, warnings and repaired answers, tokens and cost.
:func:`load_results` gives the rows as a pandas DataFrame (``pip install
'sotopia-are[analysis]'``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sotopia_are.games import GameJudge
from sotopia_are.llm import Usage
from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.files import write_text_atomically
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage import EpisodeStore, RecordNotFoundError

from .errors import StudyInputError
from .game_outcomes import role_in

if TYPE_CHECKING:
    import pandas

__all__ = [
    "TESTED_MARK",
    "BenchmarkReport",
    "BenchmarkRow",
    "DimensionStat",
    "ModelResult",
    "RoleResult",
    "benchmark_report",
    "benchmark_rows",
    "bootstrap_ci",
    "load_results",
    "report_of",
    "tested_scenario_id",
]

TESTED_MARK = ".tested"
"""What separates a benchmark episode's task id from the index of the agent under test in
its scenario id (``<task>.tested<k>``)."""

OVERALL = "overall_score"
"""The name of the mean of an agent's dimensions, as the records keep it."""

_TESTED = re.compile(rf"(?P<task>.+){re.escape(TESTED_MARK)}(?P<index>\d+)")

Outcome = Literal["win", "tie", "loss"]


def tested_scenario_id(task_id: str, index: int) -> str:
    """The scenario id of task ``task_id`` with agent ``index`` played by the model under
    test."""
    return f"{task_id}{TESTED_MARK}{index}"


def bootstrap_ci(
    values: Sequence[float], *, seed: int | str = 0, resamples: int = 1000, level: float = 0.95
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` at ``level``:
    ``resamples`` resamples with replacement drawn with ``random.Random(seed)``.
    ``ValueError`` for no values."""
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[max(math.floor(tail * resamples), 0)]
    high = means[min(math.ceil((1 - tail) * resamples) - 1, resamples - 1)]
    return low, high


@dataclass(frozen=True)
class BenchmarkRow:
    """One benchmark episode as a report counts it: who played (``model`` as
    ``agent``, ``partner`` as the others), how it went, the agent's scores (dimension →
    score, ``overall_score`` included; empty when not rated), the partners' mean
    overall score, the outcome for the model under test, the judge's failed samples,
    warnings and answers accepted after normalising or asking again, the same of the
    model under test's own calls with their tokens and cost, and the episode's tokens
    and cost (agents and judge). ``judge_model`` and ``rubric`` name the verdict the
    scores came from (``""`` when unrated). In a game, ``role`` is the role the model
    under test was dealt, and ``won`` (1 or 0) and ``payoff`` what the game's outcome
    verdict gave it (None when the game did not complete); ``""`` and None in a
    conversation."""

    episode_id: str
    task_id: str
    model: str
    partner: str
    agent: str
    seed: int
    status: str
    rated: bool
    scores: dict[str, float]
    partner_overall: float | None
    outcome: Outcome | None
    judge_model: str
    rubric: str
    judge_failures: int
    judge_warnings: int
    judge_normalized: int
    judge_repaired: int
    model_normalized: int
    model_repaired: int
    model_tokens: int
    model_cost_usd: float | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    role: str = ""
    won: float | None = None
    payoff: float | None = None

    def flat(self) -> dict[str, Any]:
        """The row as one flat mapping: each score its own column."""
        data = asdict(self)
        scores = data.pop("scores")
        return {**data, **scores}


@dataclass(frozen=True)
class DimensionStat:
    """A dimension's mean over ``n`` rated episodes and its 95% bootstrap interval."""

    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class ModelResult:
    """A model under test against one partner: episodes, rated ones, failed (not
    complete) and unrated (complete, no valid verdict) ones, wins/ties/losses, each
    dimension's :class:`DimensionStat`, the judge's failures, warnings and repairs, the
    model under test's own repairs, tokens and cost, and the tokens and cost of every
    call (both sides and the judge)."""

    model: str
    partner: str
    episodes: int
    rated: int
    failed: int
    unrated: int
    wins: int
    ties: int
    losses: int
    dimensions: dict[str, DimensionStat]
    judge_failures: int
    judge_warnings: int
    judge_normalized: int
    judge_repaired: int
    model_normalized: int
    model_repaired: int
    model_tokens: int
    model_cost_usd: float | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None

    @property
    def win_rate(self) -> float | None:
        """Wins over rated episodes (None without any)."""
        return self.wins / self.rated if self.rated else None


@dataclass(frozen=True)
class RoleResult:
    """A model under test against one partner in one ``role`` of a game (``""``: every
    role): the ``games`` with an outcome, the ``wins`` among them, the ``win_rate`` and
    the mean ``payoff``, each with its 95% bootstrap interval."""

    model: str
    partner: str
    role: str
    games: int
    wins: int
    win_rate: DimensionStat
    payoff: DimensionStat


@dataclass(frozen=True)
class BenchmarkReport:
    """The report of benchmark ``tag``: one :class:`ModelResult` per model under test and
    partner (sorted), the rows it was made of, and for games one :class:`RoleResult`
    per model under test, partner and role (every role first), empty without games."""

    tag: str
    results: tuple[ModelResult, ...]
    rows: tuple[BenchmarkRow, ...] = field(repr=False)
    games: tuple[RoleResult, ...] = ()

    @property
    def dimensions(self) -> list[str]:
        """Every dimension rated, in rubric order, ``overall_score`` last."""
        return _dimensions_of(self.rows)

    @property
    def judges(self) -> list[str]:
        """Where the scores came from: ``judge MODEL, rubric NAME`` of every verdict the
        rows were scored by, in row order."""
        return list(
            dict.fromkeys(
                f"judge {row.judge_model}, rubric {row.rubric}" for row in self.rows if row.rated
            )
        )

    def matrix(self) -> dict[str, dict[str, float | None]]:
        """Model under test → partner → mean ``overall_score`` (None when unrated)."""
        table: dict[str, dict[str, float | None]] = {}
        partners = sorted({r.partner for r in self.results})
        for result in self.results:
            row = table.setdefault(result.model, dict.fromkeys(partners))
            stat = result.dimensions.get(OVERALL)
            row[result.partner] = stat.mean if stat else None
        return table

    def dimension_table(self) -> tuple[list[str], list[list[str]]]:
        """A table of the scores: a header (``dimension``, then one column per model under
        test and partner) and one row per dimension of ``mean [low, high]`` cells."""
        header = ["dimension", *(f"{r.model} vs {r.partner}" for r in self.results)]
        rows = [
            [name, *(_stat_text(r.dimensions.get(name)) for r in self.results)]
            for name in self.dimensions
        ]
        return header, rows

    def counts_table(self) -> tuple[list[str], list[list[str]]]:
        """A table of the counts, laid out as :meth:`dimension_table`: episodes rated of
        played, wins/ties/losses against the partner, the judge's failed samples, warnings
        and answers fixed (normalised or asked again), the model under test's fixed
        answers, tokens and cost, and the tokens and cost of all calls."""
        header = ["", *(f"{r.model} vs {r.partner}" for r in self.results)]
        counts: dict[str, Callable[[ModelResult], str]] = {
            "rated / episodes": lambda r: f"{r.rated}/{r.episodes}",
            "wins/ties/losses": lambda r: f"{r.wins}/{r.ties}/{r.losses}",
            "judge failed samples": lambda r: str(r.judge_failures),
            "judge warnings": lambda r: str(r.judge_warnings),
            "judge answers fixed": lambda r: str(r.judge_normalized + r.judge_repaired),
            "model answers fixed": lambda r: str(r.model_normalized + r.model_repaired),
            "model tokens": lambda r: str(r.model_tokens),
            "model cost": lambda r: _cost_text(r.model_cost_usd),
            "all tokens": lambda r: str(r.prompt_tokens + r.completion_tokens),
            "all cost": lambda r: _cost_text(r.cost_usd),
        }
        rows = [[name, *(cell(r) for r in self.results)] for name, cell in counts.items()]
        return header, rows

    def game_table(self) -> tuple[list[str], list[list[str]]]:
        """A table of the games: a header and one row per model under test, partner and
        role (``every role`` first): games with an outcome, the win rate and the mean
        payoff as ``mean [low, high]``. No rows without games."""
        header = ["model vs partner", "role", "games", "win rate", "mean payoff"]
        rows = [
            [
                f"{r.model} vs {r.partner}",
                r.role or "every role",
                str(r.games),
                _stat_text(r.win_rate),
                _stat_text(r.payoff),
            ]
            for r in self.games
        ]
        return header, rows

    def to_json(self) -> str:
        """The report as JSON: the tag, the results (dimensions with mean, low, high,
        n), the matrix of models under test by partner, and the games' results per
        role."""
        return json.dumps(
            {
                "tag": self.tag,
                "judges": self.judges,
                "dimensions": self.dimensions,
                "results": [asdict(result) for result in self.results],
                "matrix": self.matrix(),
                "games": [asdict(result) for result in self.games],
            },
            indent=2,
        )

    def results_csv(self) -> str:
        """One CSV line per model, partner and dimension (mean, low, high, n), with the
        pair's counts, tokens and cost."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        counts = [
            "episodes", "rated", "failed", "unrated", "wins", "ties", "losses",
            "judge_failures", "judge_warnings", "judge_normalized", "judge_repaired",
            "model_normalized", "model_repaired", "model_tokens", "model_cost_usd",
            "prompt_tokens", "completion_tokens", "cost_usd",
        ]  # fmt: skip
        writer.writerow(["model", "partner", "dimension", "mean", "low", "high", "n", *counts])
        for result in self.results:
            pair = asdict(result)
            for name, stat in result.dimensions.items():
                writer.writerow(
                    [result.model, result.partner, name, stat.mean, stat.low, stat.high, stat.n]
                    + [_csv_value(pair[key]) for key in counts]
                )
        return out.getvalue()

    def episodes_csv(self) -> str:
        """One CSV line per episode (:meth:`BenchmarkRow.flat`), scores as columns."""
        out = io.StringIO()
        columns = _row_columns(self.dimensions)
        writer = csv.DictWriter(out, columns, lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: _csv_value(v) for k, v in row.flat().items()})
        return out.getvalue()

    def write(self, directory: Path) -> list[Path]:
        """Write ``report.json``, ``results.csv`` and ``episodes.csv`` into ``directory``
        (made if missing), each file whole; their paths."""
        directory.mkdir(parents=True, exist_ok=True)
        texts = {
            "report.json": self.to_json() + "\n",
            "results.csv": self.results_csv(),
            "episodes.csv": self.episodes_csv(),
        }
        written = []
        for name, text in texts.items():
            write_text_atomically(str(directory / name), text)
            written.append(directory / name)
        return written


def benchmark_rows(
    store: EpisodeStore, tag: str, *, judge_model: str | None = None
) -> list[BenchmarkRow]:
    """One row per stored episode of benchmark ``tag``, scored by its latest rated verdict
    (of ``judge_model``, a model or verdict key, if given:
    :meth:`~sotopia_are.record.EpisodeRecord.verdict_of`), in an order of their own
    (model, partner, task, agent, seed), so the report does not depend on when or where
    the episodes were stored.
    :class:`~sotopia_are.storage.RecordNotFoundError` if no episode has ``tag``;
    ``ValueError`` naming an episode that is not a benchmark's."""
    ids = store.episode_ids(tag=tag)
    if not ids:
        raise RecordNotFoundError(f"no episodes tagged {tag!r} in {store.location}")
    rows = [row_of(store.load(pk), judge_model=judge_model) for pk in ids]
    return sorted(
        rows, key=lambda r: (r.model, r.partner, r.task_id, r.agent, r.seed, r.episode_id)
    )


def benchmark_report(
    store: EpisodeStore, tag: str, *, judge_model: str | None = None, seed: int = 0
) -> BenchmarkReport:
    """The report of benchmark ``tag`` from the store alone (see :func:`benchmark_rows`
    and :func:`report_of`)."""
    return report_of(benchmark_rows(store, tag, judge_model=judge_model), tag=tag, seed=seed)


def row_of(record: EpisodeRecord, *, judge_model: str | None = None) -> BenchmarkRow:
    """The :class:`BenchmarkRow` of a benchmark episode's record; ``ValueError`` if its
    scenario id does not name the agent under test."""
    found = _TESTED.fullmatch(record.scenario_id)
    names = record.spec.agent_names
    if found is None or int(found["index"]) >= len(names):
        raise StudyInputError(
            f"episode {record.episode_id} (scenario {record.scenario_id!r}) is not a benchmark "
            f"episode: its scenario id does not end in {TESTED_MARK}<agent index>"
        )
    agent = names[int(found["index"])]
    others = [name for name in names if name != agent]
    partners = sorted({record.models.get(name, "") for name in others})
    complete = record.status is EpisodeStatus.COMPLETE
    verdict = record.verdict_of(judge_model) if complete else None
    scores = verdict.scores if verdict is not None else {}
    own = scores.get(agent, {})
    theirs = [scores[name][OVERALL] for name in others if name in scores]
    partner_overall = statistics.fmean(theirs) if theirs else None
    judged = Usage.of(call for v in record.verdicts for call in v.evaluation.calls)
    won, payoff = _game_scores(record, agent)
    # The model under test's own calls: its agent's (scoped "<episode id>/<agent>").
    played = Usage.of(c for c in record.calls if c.scope == f"{record.episode_id}/{agent}")
    usage = record.usage
    return BenchmarkRow(
        episode_id=record.episode_id,
        task_id=found["task"],
        model=record.models.get(agent, ""),
        partner=" + ".join(partners),
        agent=agent,
        seed=record.spec.seed,
        status=record.status.value,
        rated=bool(own),
        scores=dict(own),
        partner_overall=partner_overall,
        outcome=_outcome(own.get(OVERALL), partner_overall),
        judge_model=verdict.judge_model if verdict is not None else "",
        rubric=verdict.rubric if verdict is not None else "",
        judge_failures=sum(len(v.evaluation.failures) for v in record.verdicts),
        judge_warnings=sum(len(v.evaluation.warnings) for v in record.verdicts),
        judge_normalized=judged.normalized_calls,
        judge_repaired=judged.repaired_calls,
        model_normalized=played.normalized_calls,
        model_repaired=played.repaired_calls,
        model_tokens=played.total_tokens,
        model_cost_usd=played.cost_usd,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd,
        role=role_in(record, agent),
        won=won,
        payoff=payoff,
    )


def _game_scores(record: EpisodeRecord, agent: str) -> tuple[float | None, float | None]:
    """``agent``'s ``won`` and ``payoff`` in the outcome verdict of the game ``record``
    (None, None for a conversation or a game without a rated outcome verdict)."""
    verdict = record.verdict_of(GameJudge.verdict_key) if record.spec.game else None
    scores = verdict.scores.get(agent) if verdict is not None else None
    if scores is None:
        return None, None
    return scores["won"], scores["payoff"]


def _outcome(own: float | None, partner: float | None) -> Outcome | None:
    if own is None or partner is None:
        return None
    if math.isclose(own, partner, abs_tol=1e-9):
        return "tie"
    return "win" if own > partner else "loss"


def report_of(
    rows: Iterable[BenchmarkRow], *, tag: str = "", seed: int = 0, resamples: int = 1000
) -> BenchmarkReport:
    """The report of ``rows``: one :class:`ModelResult` per model under test and partner;
    each interval is drawn with a seed made of ``seed``, the pair and the dimension, so
    the same rows and seed give the same report."""
    kept = tuple(rows)
    pairs = sorted({(row.model, row.partner) for row in kept})
    results = []
    games = []
    for model, partner in pairs:
        mine = [row for row in kept if (row.model, row.partner) == (model, partner)]
        results.append(_result(model, partner, mine, seed=seed, resamples=resamples))
        played = [row for row in mine if row.won is not None and row.payoff is not None]
        for role in ["", *sorted({row.role for row in played})]:
            chosen = [row for row in played if role in ("", row.role)]
            if chosen:
                games.append(_role_result(model, partner, role, chosen, seed, resamples))
    return BenchmarkReport(tag, tuple(results), kept, tuple(games))


def _role_result(
    model: str, partner: str, role: str, rows: Sequence[BenchmarkRow], seed: int, resamples: int
) -> RoleResult:
    """The :class:`RoleResult` of ``rows`` (games with an outcome)."""

    def stat(name: str, values: list[float]) -> DimensionStat:
        where = f"{seed}|{model}|{partner}|{role}|{name}"
        low, high = bootstrap_ci(values, seed=where, resamples=resamples)
        return DimensionStat(statistics.fmean(values), low, high, len(values))

    won = [row.won for row in rows if row.won is not None]
    payoffs = [row.payoff for row in rows if row.payoff is not None]
    return RoleResult(
        model=model,
        partner=partner,
        role=role,
        games=len(rows),
        wins=sum(value == 1 for value in won),
        win_rate=stat("won", won),
        payoff=stat("payoff", payoffs),
    )


def _result(
    model: str, partner: str, rows: Sequence[BenchmarkRow], *, seed: int, resamples: int
) -> ModelResult:
    rated = [row for row in rows if row.rated]
    names: dict[str, None] = {}
    for row in rated:
        names.update(dict.fromkeys(row.scores))
    dimensions = {}
    for name in [n for n in names if n != OVERALL] + ([OVERALL] if OVERALL in names else []):
        values = [row.scores[name] for row in rated if name in row.scores]
        low, high = bootstrap_ci(
            values, seed=f"{seed}|{model}|{partner}|{name}", resamples=resamples
        )
        dimensions[name] = DimensionStat(statistics.fmean(values), low, high, len(values))
    outcomes = [row.outcome for row in rows]
    return ModelResult(
        model=model,
        partner=partner,
        episodes=len(rows),
        rated=len(rated),
        failed=sum(row.status != EpisodeStatus.COMPLETE.value for row in rows),
        unrated=sum(row.status == EpisodeStatus.COMPLETE.value and not row.rated for row in rows),
        wins=outcomes.count("win"),
        ties=outcomes.count("tie"),
        losses=outcomes.count("loss"),
        dimensions=dimensions,
        judge_failures=sum(row.judge_failures for row in rows),
        judge_warnings=sum(row.judge_warnings for row in rows),
        judge_normalized=sum(row.judge_normalized for row in rows),
        judge_repaired=sum(row.judge_repaired for row in rows),
        model_normalized=sum(row.model_normalized for row in rows),
        model_repaired=sum(row.model_repaired for row in rows),
        model_tokens=sum(row.model_tokens for row in rows),
        model_cost_usd=_known_sum(row.model_cost_usd for row in rows),
        prompt_tokens=sum(row.prompt_tokens for row in rows),
        completion_tokens=sum(row.completion_tokens for row in rows),
        cost_usd=_known_sum(row.cost_usd for row in rows),
    )


def load_results(
    store: EpisodeStore, *, tag: str, judge_model: str | None = None
) -> pandas.DataFrame:
    """Benchmark ``tag``'s episodes as a pandas DataFrame, one row per episode
    (:meth:`BenchmarkRow.flat`: each dimension its own column). ``ImportError`` saying
    what to install without pandas; see :func:`benchmark_rows` for the other errors."""
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "load_results needs pandas: pip install 'sotopia-are[analysis]'"
        ) from None
    rows = benchmark_rows(store, tag, judge_model=judge_model)
    return pandas.DataFrame(
        [row.flat() for row in rows], columns=_row_columns(_dimensions_of(rows))
    )


def _dimensions_of(rows: Sequence[BenchmarkRow]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(name for name in row.scores if name != OVERALL))
    return [*seen, OVERALL] if seen else []


def _row_columns(dimensions: Sequence[str]) -> list[str]:
    fixed = [name for name in BenchmarkRow.__dataclass_fields__ if name != "scores"]
    return [*fixed, *dimensions]


def _stat_text(stat: DimensionStat | None) -> str:
    if stat is None:
        return "-"
    return f"{stat.mean:.2f} [{stat.low:.2f}, {stat.high:.2f}]"


def _known_sum(costs: Iterable[float | None]) -> float | None:
    """The sum of the known costs; None when none is known."""
    known = [cost for cost in costs if cost is not None]
    return math.fsum(known) if known else None


def _cost_text(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _csv_value(value: object) -> object:
    return "" if value is None else value
