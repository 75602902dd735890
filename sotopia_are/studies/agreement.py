"""`agreement`: how well a judge's scores agree with human ratings, per dimension.

The labelled set is human ratings of episodes, read by :func:`read_human_ratings` from
SOTOPIA-π's files: its human-evaluation CSV (one row per annotator, ``pk`` and a ``data``
column whose ``names`` order the agents) or the per-episode JSON of the human-rated Sotopia
transcripts (``human_annotations``, one object per annotator). Scores carry the suffix
``_1``/``_2`` of the agent they rate; several annotators are averaged.

Each agent of each episode both sides rated is one pair per dimension; :func:`agreement`
reports Pearson's r and Spearman's rho with seeded bootstrap CIs (resampling whole
episodes, since one episode's agents are rated together), per judge and, with several
judges, for their panel mean.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sotopia_are.messages import ScriptBackground
from sotopia_are.record import EpisodeRecord
from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.storage import EpisodeStore, RecordNotFoundError

from .correlation import bootstrap_ci, pearson, spearman
from .errors import AgreementError
from .files import selected_episodes
from .panel import judge_verdicts, panel_scores

__all__ = [
    "AgreementError",
    "AgreementReport",
    "DimensionAgreement",
    "HumanRatings",
    "LabelledEpisode",
    "agreement",
    "labelled_scripts",
    "read_human_ratings",
    "stored_agreement",
]

_SCORE_KEY = re.compile(r"^(?P<dimension>[a-z][a-z_]*?)_(?P<agent>[12])$")


@dataclass(frozen=True)
class LabelledEpisode:
    """One human-rated episode: ``scores[agent][dimension]`` is the annotators' mean.

    ``aliases`` are the ids it may be stored under (the file's stem, the episode's pk).
    """

    episode_id: str
    aliases: tuple[str, ...]
    agents: tuple[str, ...]
    scores: dict[str, dict[str, float]]
    annotators: int
    source: str


@dataclass(frozen=True)
class HumanRatings:
    """A labelled set: human-rated episodes, each once."""

    episodes: tuple[LabelledEpisode, ...]

    def find(self, episode_id: str) -> LabelledEpisode | None:
        """The labelled episode stored as ``episode_id`` (any alias), if any."""
        return next((e for e in self.episodes if episode_id in e.aliases), None)


@dataclass(frozen=True)
class DimensionAgreement:
    """One dimension: ``n`` (episode, agent) pairs, Pearson's r and Spearman's rho with
    their bootstrap CIs; None where undefined (fewer than 2 pairs, a constant side) or,
    for a CI, too few episodes to resample (fewer than 3)."""

    dimension: str
    n: int
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None


@dataclass(frozen=True)
class AgreementReport:
    """One judge's (or the panel's) agreement with the labelled set.

    ``judge`` is the verdict key, or ``panel of N judges``; ``episodes`` the ids compared;
    ``unrated`` the labelled episodes this judge has no verdict on.
    """

    judge: str
    judges: tuple[str, ...]
    episodes: tuple[str, ...]
    unrated: tuple[str, ...]
    dimensions: tuple[DimensionAgreement, ...]
    resamples: int
    confidence: float
    seed: int
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (undefined numbers are null)."""
        return {
            "judge": self.judge,
            "judges": list(self.judges),
            "episodes": list(self.episodes),
            "unrated": list(self.unrated),
            "bootstrap": {
                "resamples": self.resamples,
                "confidence": self.confidence,
                "seed": self.seed,
                "unit": "episode",
            },
            "dimensions": [
                {
                    "dimension": d.dimension,
                    "n": d.n,
                    "pearson": d.pearson,
                    "pearson_ci": list(d.pearson_ci) if d.pearson_ci else None,
                    "spearman": d.spearman,
                    "spearman_ci": list(d.spearman_ci) if d.spearman_ci else None,
                }
                for d in self.dimensions
            ],
        }


# -- the labelled set ----------------------------------------------------------------------


def read_human_ratings(paths: Iterable[Path]) -> HumanRatings:
    """The human ratings in ``paths`` (``.csv``: SOTOPIA-π's human-evaluation CSV;
    ``.json``: a human-rated transcript's ratings). :class:`AgreementError` naming the
    file (and row) for an unreadable file, a missing score or an episode given twice."""
    episodes: list[LabelledEpisode] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise AgreementError(f"{path}: cannot read it: {error}") from None
        read = _from_csv(text, path) if path.suffix.lower() == ".csv" else [_from_json(text, path)]
        for episode in read:
            twice = next((e for e in episodes if set(e.aliases) & set(episode.aliases)), None)
            if twice is not None:
                raise AgreementError(
                    f"{path}: episode {episode.episode_id} is rated again (already in "
                    f"{twice.source}); give each labelled episode once"
                )
            episodes.append(episode)
    if not episodes:
        raise AgreementError("no human ratings given: pass SOTOPIA-π .csv or .json files")
    return HumanRatings(tuple(episodes))


def _from_json(text: str, path: Path) -> LabelledEpisode:
    try:
        document = loads_json(text)
    except json.JSONDecodeError as error:
        raise AgreementError(f"{path}: not JSON: {error}") from None
    if not isinstance(document, dict):
        raise AgreementError(f"{path}: expected a JSON object with human_annotations")
    missing = [
        key for key in ("agent_1_name", "agent_2_name", "human_annotations") if key not in document
    ]
    if missing:
        raise AgreementError(f"{path}: missing {', '.join(missing)} (a human-rated episode)")
    annotations = document["human_annotations"]
    if not isinstance(annotations, list) or not annotations:
        raise AgreementError(f"{path}: human_annotations must be a non-empty list")
    agents = (str(document["agent_1_name"]), str(document["agent_2_name"]))
    rows = [_scores(a, f"{path}: annotator {n}") for n, a in enumerate(annotations, 1)]
    pk = str(document.get("episode_pk") or path.stem)
    return _episode(path.stem, (path.stem, pk), agents, rows, str(path))


def _from_csv(text: str, path: Path) -> list[LabelledEpisode]:
    # Quoted fields (reasonings, the data JSON) may hold newlines.
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = reader.fieldnames or []
    missing = [column for column in ("pk", "data") if column not in fields]
    if missing:
        raise AgreementError(
            f"{path}: missing column {', '.join(missing)} (SOTOPIA-π's human-evaluation CSV "
            "has pk, data and <dimension>_1/_2 columns)"
        )
    grouped: dict[str, tuple[tuple[str, str], list[dict[str, dict[str, float]]]]] = {}
    try:
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            try:
                names = loads_json(row["data"] or "")["names"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise AgreementError(f"{where}: its data column has no JSON names list") from None
            if not isinstance(names, list) or len(names) != 2:
                raise AgreementError(f"{where}: data.names must name the 2 agents")
            pk = str(row["pk"] or "").strip()
            if not pk:
                raise AgreementError(f"{where}: empty pk")
            agents = (str(names[0]), str(names[1]))
            earlier = grouped.setdefault(pk, (agents, []))
            if earlier[0] != agents:
                raise AgreementError(f"{where}: episode {pk} names other agents than before")
            earlier[1].append(_scores(row, where))
    except csv.Error as error:
        raise AgreementError(f"{path}: not a readable CSV: {error}") from None
    return [_episode(pk, (pk,), agents, rows, str(path)) for pk, (agents, rows) in grouped.items()]


def _scores(annotation: Mapping[str, Any], where: str) -> dict[str, dict[str, float]]:
    """``{"1"|"2": {dimension: score}}`` from one annotator's ``<dimension>_<agent>``."""
    if not isinstance(annotation, Mapping):
        raise AgreementError(f"{where}: expected an object of scores")
    scores: dict[str, dict[str, float]] = {"1": {}, "2": {}}
    for key, value in annotation.items():
        match = _SCORE_KEY.match(str(key))
        if match is None or match["dimension"].endswith("_reasoning"):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise AgreementError(f"{where}: {key} is {value!r}, not a number")
        scores[match["agent"]][match["dimension"]] = number
    if not scores["1"] or scores["1"].keys() != scores["2"].keys():
        raise AgreementError(
            f"{where}: expected the same <dimension>_1 and <dimension>_2 scores for both agents"
        )
    return scores


def _episode(
    episode_id: str,
    aliases: tuple[str, ...],
    agents: tuple[str, str],
    rows: Sequence[dict[str, dict[str, float]]],
    source: str,
) -> LabelledEpisode:
    # In the files' order (SOTOPIA-Eval's), kept when every annotator rated it.
    dimensions = [d for d in rows[0]["1"] if all(d in row["1"] for row in rows)]
    scores = {
        agent: {
            dimension: math.fsum(row[slot][dimension] for row in rows) / len(rows)
            for dimension in dimensions
        }
        for slot, agent in (("1", agents[0]), ("2", agents[1]))
    }
    return LabelledEpisode(
        episode_id, tuple(dict.fromkeys(aliases)), agents, scores, len(rows), source
    )


def labelled_scripts(path: Path) -> dict[str, tuple[str, ScriptBackground]]:
    """The conversations SOTOPIA-π's human-evaluation CSV holds (its ``data`` column), to
    be rated like any script: per episode pk, the script (``Turn #N`` then the rendered
    action) and its context (scenario, each agent's background and goal).
    :class:`AgreementError` naming the line for a row without them."""
    try:
        reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))
        scripts: dict[str, tuple[str, ScriptBackground]] = {}
        for row in reader:
            pk = str(row.get("pk") or "").strip()
            if pk and pk not in scripts:
                scripts[pk] = _script_of(row.get("data") or "", f"{path}: line {reader.line_num}")
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise AgreementError(f"{path}: cannot read it: {error}") from None
    return scripts


def _script_of(data: str, where: str) -> tuple[str, ScriptBackground]:
    try:
        episode = loads_json(data)
        names = [str(name) for name in episode["names"]]
        info = episode["personal_info"]
        background = ScriptBackground(
            scenario=str(episode["scenario"]),
            agent_names=names,
            agent_backgrounds=[_background(info[name]) for name in names],
            agent_goals=[str(episode["social_goal"][name]) for name in names],
        )
        turns = [
            f"Turn #{number}\n{_action(str(turn['speaker']), str(turn['dialogue']))}"
            for number, turn in enumerate(episode["parsed_conversation"], 1)
        ]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise AgreementError(
            f"{where}: no conversation with its context in data: {error}"
        ) from None
    return "\n".join(turns) + "\n", background


def _background(person: Mapping[str, Any]) -> str:
    """Sotopia's rendering of a character (``ScriptBackground`` of a profile)."""
    name = person["name"]
    return (
        f"{name} is a {person['age']}-year-old {person['profession']}. "
        f"{person['pronouns']} pronouns. {person['interests']} Personality and values "
        f"description: {person['personality']} {name.split()[0]}'s secrets: {person['secrets']}"
    )


def _action(speaker: str, dialogue: str) -> str:
    """A turn as a script line: other actions come rendered (``Name [action] …``, ``Name
    left the conversation.``), speech quoted (``"…"``) or, once in a while, bare."""
    text = dialogue.strip()
    if text.startswith(speaker):
        return text.removesuffix(".") if text.endswith("left the conversation.") else text
    quoted = text if text.startswith('"') else f'"{text}"'
    return f"{speaker} said: {quoted}"


# -- the comparison ------------------------------------------------------------------------


def agreement(
    records: Iterable[EpisodeRecord],
    labels: HumanRatings,
    *,
    judges: Sequence[str] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[AgreementReport]:
    """One report per judge that rated labelled episodes (verdict keys in the order first
    seen; with ``judges``, only those models or keys), then, with several judges, one for
    their panel mean (:func:`~sotopia_are.studies.panel_scores`). Dimensions are those both
    the humans and the judge rated, in the labelled files' order.

    :class:`AgreementError` when no record is a labelled episode, or none of those was
    rated by a judge asked for.
    """
    labelled = [(r, e) for r in records if (e := labels.find(r.episode_id)) is not None]
    if not labelled:
        raise AgreementError(
            f"the labelled set ({len(labels.episodes)} episodes, e.g. "
            f"{', '.join(e.episode_id for e in labels.episodes[:3])}) and the rated episodes "
            "share no episodes: store the labelled transcripts under their file names "
            "(sotopia-are import --kind script FILE.txt) and rate them (sotopia-are evaluate)"
        )
    keys = list(
        dict.fromkeys(v.key for record, _ in labelled for v in judge_verdicts(record, judges))
    )
    if not keys:
        asked = f" by {', '.join(judges)}" if judges else ""
        raise AgreementError(
            f"none of the {len(labelled)} labelled episodes found was rated{asked}: rate them "
            "first (sotopia-are evaluate ID… --judge-model MODEL)"
        )
    settings = {"resamples": resamples, "confidence": confidence, "seed": seed}
    panels: list[tuple[str, tuple[str, ...]]] = [(key, (key,)) for key in keys]
    if len(keys) > 1:
        panels.append((f"panel of {len(keys)} judges", tuple(keys)))
    return [_report(name, panel, labelled, labels, settings) for name, panel in panels]


def _report(
    name: str,
    keys: tuple[str, ...],
    labelled: Sequence[tuple[EpisodeRecord, LabelledEpisode]],
    labels: HumanRatings,
    settings: dict[str, Any],
) -> AgreementReport:
    pairs: dict[str, tuple[list[float], list[float], list[str]]] = {}
    compared: list[str] = []
    for record, episode in labelled:
        scores = panel_scores(record, keys)
        if not scores:
            continue
        compared.append(episode.episode_id)
        for agent in episode.agents:
            for dimension, score in scores.get(agent, {}).items():
                human = episode.scores[agent].get(dimension)
                if human is None:
                    continue  # overall_score, or a dimension the humans did not rate
                judge_side, human_side, groups = pairs.setdefault(dimension, ([], [], []))
                judge_side.append(score.mean)
                human_side.append(human)
                groups.append(episode.episode_id)
    order = list(dict.fromkeys(d for _, e in labelled for s in e.scores.values() for d in s))
    dimensions = tuple(
        DimensionAgreement(
            dimension=dimension,
            n=len(xs),
            pearson=pearson(xs, ys),
            pearson_ci=bootstrap_ci(xs, ys, pearson, groups=groups, **settings),
            spearman=spearman(xs, ys),
            spearman_ci=bootstrap_ci(xs, ys, spearman, groups=groups, **settings),
        )
        for dimension, (xs, ys, groups) in sorted(
            pairs.items(), key=lambda item: order.index(item[0])
        )
    )
    rated = set(compared)
    unrated = tuple(e.episode_id for e in labels.episodes if e.episode_id not in rated)
    return AgreementReport(
        judge=name,
        judges=keys,
        episodes=tuple(compared),
        unrated=unrated,
        dimensions=dimensions,
        **settings,
    )


def stored_agreement(
    store: EpisodeStore,
    label_files: Sequence[Path],
    *,
    tag: str | None = None,
    judges: Sequence[str] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[AgreementReport]:
    """:func:`agreement` of the stored episodes (those tagged ``tag``, else every labelled
    episode stored under one of its ids) with the human ratings in ``label_files``."""
    labels = read_human_ratings(label_files)
    if tag is not None:
        try:
            ids = selected_episodes(store, tag=tag)
        except RecordNotFoundError as error:
            raise AgreementError(str(error)) from None
        records = [store.load(episode_id) for episode_id in ids if labels.find(episode_id)]
    else:
        records = [
            record
            for episode in labels.episodes
            for alias in episode.aliases
            if (record := _stored(store, alias)) is not None
        ]
    return agreement(
        records, labels, judges=judges, resamples=resamples, confidence=confidence, seed=seed
    )


def _stored(store: EpisodeStore, episode_id: str) -> EpisodeRecord | None:
    try:
        return store.load(episode_id)
    except RecordNotFoundError:
        return None
