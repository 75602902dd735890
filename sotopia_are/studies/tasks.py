"""Task sets: which scenarios a study plays, with which characters, and samplers of them.

A :class:`Task` is one environment profile and the agent profiles that play it (in the
order of its goals), as SOTOPIA's ``EnvAgentComboStorage`` pairs them; a :class:`TaskSet`
is a named list of tasks. SOTOPIA's 450 combinations file reads as one
(:func:`read_task_set`), and :func:`sample_tasks` draws a task set from the profiles a
store holds: uniformly, or with the characters related as the scenario requires. Both are
seeded: the same seed and profiles give the same tasks.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.social import EpisodeSpec
from sotopia_are.social.spec import check_safe_id
from sotopia_are.storage import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeStore,
    RecordNotFoundError,
    RelationshipProfile,
    RelationshipType,
)

from .errors import StudyInputError
from .profiles import spec_from_profiles

__all__ = ["Task", "TaskSet", "read_task_set", "sample_tasks", "select_tasks"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Task:
    """One episode setting: environment profile ``env_id`` played by the agent profiles
    ``agent_ids`` (in the order of its goals); ``task_id`` names it (a safe id)."""

    task_id: str
    env_id: str
    agent_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        check_safe_id(self.task_id, "task id")
        if len(self.agent_ids) < 2:
            raise StudyInputError(f"task {self.task_id}: a task needs at least two agents")
        if len(set(self.agent_ids)) != len(self.agent_ids):
            raise StudyInputError(f"task {self.task_id}: an agent plays twice")

    def spec(self, store: EpisodeStore, *, max_turns: int = 20) -> EpisodeSpec:
        """The episode spec of this task from ``store``'s profiles, named by the task's id
        (each run a fresh episode id; a batch plans by the name).
        :class:`~sotopia_are.storage.RecordNotFoundError` for a profile it lacks;
        ``ValueError`` if the environment has not one goal per agent."""
        try:
            environment = store.get(EnvironmentProfile, self.env_id)
            agents = [store.get(AgentProfile, pk) for pk in self.agent_ids]
        except RecordNotFoundError as error:
            raise RecordNotFoundError(
                f"task {self.task_id}: {error}; import its profiles first "
                "(sotopia-are import FILE --kind agents|environments)"
            ) from None
        return spec_from_profiles(environment, agents, name=self.task_id, max_turns=max_turns)


@dataclass(frozen=True)
class TaskSet:
    """A named list of tasks (distinct ids), in the order a study plays them."""

    name: str
    tasks: tuple[Task, ...]

    def __post_init__(self) -> None:
        ids = [task.task_id for task in self.tasks]
        twice = sorted({pk for pk in ids if ids.count(pk) > 1})
        if twice:
            raise StudyInputError(f"task set {self.name!r} names task {', '.join(twice)} twice")

    def __len__(self) -> int:
        return len(self.tasks)

    def sample(self, count: int, *, seed: int = 0) -> TaskSet:
        """``count`` of these tasks drawn at random without repetition (seeded), in this
        set's order; ``ValueError`` if it has fewer."""
        if not 0 < count <= len(self.tasks):
            raise StudyInputError(
                f"cannot draw {count} tasks from the {len(self.tasks)} of {self.name}"
            )
        drawn = set(random.Random(seed).sample(range(len(self.tasks)), count))
        kept = tuple(task for index, task in enumerate(self.tasks) if index in drawn)
        return TaskSet(f"{self.name}-{count}-seed{seed}", kept)

    def specs(self, store: EpisodeStore, *, max_turns: int = 20) -> list[EpisodeSpec]:
        """Every task's spec (see :meth:`Task.spec`)."""
        return [task.spec(store, max_turns=max_turns) for task in self.tasks]

    def to_jsonl(self) -> str:
        """One task a line (``task_id``, ``env_id``, ``agent_ids``); :func:`read_task_set`
        reads it back."""
        return "".join(
            json.dumps({"task_id": t.task_id, "env_id": t.env_id, "agent_ids": list(t.agent_ids)})
            + "\n"
            for t in self.tasks
        )


def read_task_set(path: Path, *, name: str | None = None) -> TaskSet:
    """The task set in JSONL file ``path`` (named ``name``, default the file's stem): lines
    of ``task_id``, ``env_id``, ``agent_ids`` (:meth:`TaskSet.to_jsonl`), or SOTOPIA's
    combinations (``combo_id`` for the id). ``ValueError`` naming a bad line."""
    tasks: list[Task] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = loads_json(line)
            if not isinstance(data, dict):
                raise StudyInputError("expected a JSON object")
            agent_ids = data["agent_ids"]
            if not isinstance(agent_ids, list):
                raise StudyInputError("agent_ids is not a list")
            task_id = data.get("task_id", data.get("combo_id"))
            if task_id is None:
                raise StudyInputError("no task_id (or combo_id)")
            tasks.append(Task(str(task_id), str(data["env_id"]), tuple(map(str, agent_ids))))
        except (ValueError, KeyError) as error:
            what = f"no {error}" if isinstance(error, KeyError) else str(error)
            raise StudyInputError(f"{path}:{number}: not a task: {what}") from None
    if not tasks:
        raise StudyInputError(f"{path} holds no tasks")
    return TaskSet(name or path.stem, tuple(tasks))


def sample_tasks(
    store: EpisodeStore,
    count: int,
    *,
    seed: int = 0,
    agents: int = 2,
    related: bool = False,
    name: str | None = None,
) -> TaskSet:
    """``count`` distinct tasks drawn from ``store``'s profiles with ``random.Random(seed)``:
    an environment with ``agents`` goals, and ``agents`` distinct characters for it.

    ``related``: every two of the characters have a relationship profile of the kind the
    environment asks for (SOTOPIA's own combinations are drawn so); else any characters
    will do. ``ValueError`` if the profiles allow fewer than ``count`` such tasks."""
    if count < 1 or agents < 2:
        raise StudyInputError("draw at least one task of at least two agents")
    environments = sorted(
        (e for e in store.all(EnvironmentProfile) if len(e.agent_goals) == agents),
        key=lambda e: str(e.pk),
    )
    characters = sorted(str(a.pk) for a in store.all(AgentProfile))
    if not environments or len(characters) < agents:
        raise StudyInputError(
            f"the store holds {len(environments)} environments of {agents} agents and "
            f"{len(characters)} characters; import SOTOPIA's or your own profiles first "
            "(sotopia-are import FILE --kind environments|agents)"
        )
    rng = random.Random(seed)
    if related:
        candidates = _related_candidates(store, environments, characters, agents)
        if len(candidates) < count:
            raise StudyInputError(
                f"the stored profiles allow {len(candidates)} tasks with characters related "
                f"as their environments ask, not {count}"
            )
        chosen = rng.sample(candidates, count)
    else:
        chosen = _uniform_draws(rng, environments, characters, agents, count)
    tasks = tuple(_task(env, ids) for env, ids in chosen)
    label = "related" if related else "uniform"
    return TaskSet(name or f"{label}-{count}-seed{seed}", tasks)


def _uniform_draws(
    rng: random.Random,
    environments: Sequence[EnvironmentProfile],
    characters: Sequence[str],
    agents: int,
    count: int,
) -> list[tuple[EnvironmentProfile, tuple[str, ...]]]:
    """``count`` distinct (environment, characters) draws, each uniform; ``ValueError``
    if there are fewer."""
    possible = len(environments) * _permutations(len(characters), agents)
    if possible < count:
        raise StudyInputError(f"the stored profiles allow {possible} distinct tasks, not {count}")
    seen: set[tuple[str, tuple[str, ...]]] = set()
    drawn: list[tuple[EnvironmentProfile, tuple[str, ...]]] = []
    while len(drawn) < count:
        environment = rng.choice(environments)
        ids = tuple(rng.sample(characters, agents))
        if (str(environment.pk), ids) not in seen:
            seen.add((str(environment.pk), ids))
            drawn.append((environment, ids))
    return drawn


def _permutations(n: int, k: int) -> int:
    total = 1
    for factor in range(n - k + 1, n + 1):
        total *= factor
    return total


def _related_candidates(
    store: EpisodeStore,
    environments: Sequence[EnvironmentProfile],
    characters: Sequence[str],
    agents: int,
) -> list[tuple[EnvironmentProfile, tuple[str, ...]]]:
    """Every (environment, characters) whose characters are pairwise related as the
    environment asks, in a fixed order (the draw is made from it)."""
    pairs: dict[RelationshipType, set[frozenset[str]]] = {}
    for profile in store.all(RelationshipProfile):
        pair = frozenset((profile.agent_1_id, profile.agent_2_id))
        pairs.setdefault(profile.relationship, set()).add(pair)
    groups: dict[RelationshipType, list[tuple[str, ...]]] = {}
    candidates: list[tuple[EnvironmentProfile, tuple[str, ...]]] = []
    for environment in environments:
        wanted = environment.relationship
        if wanted not in groups:
            groups[wanted] = list(_cliques(characters, agents, pairs.get(wanted, set())))
        for group in groups[wanted]:
            # Either character may play either goal.
            candidates.extend((environment, order) for order in itertools.permutations(group))
    return candidates


def _cliques(
    characters: Sequence[str], size: int, related: set[frozenset[str]]
) -> Iterable[tuple[str, ...]]:
    """Every set of ``size`` characters of which each two are a pair in ``related``."""

    def grow(group: tuple[str, ...], start: int) -> Iterable[tuple[str, ...]]:
        if len(group) == size:
            yield group
            return
        for index in range(start, len(characters)):
            candidate = characters[index]
            if all(frozenset((member, candidate)) in related for member in group):
                yield from grow((*group, candidate), index + 1)

    return grow((), 0)


def _task(environment: EnvironmentProfile, agent_ids: Sequence[str]) -> Task:
    """A task with a readable, stable id: the environment's codename and a digest of the
    environment and characters."""
    digest = hashlib.sha1("|".join([str(environment.pk), *agent_ids]).encode()).hexdigest()[:10]
    stem = _UNSAFE.sub("_", environment.codename or str(environment.pk)).strip("_.-")[:100]
    return Task(f"{stem or 'task'}-{digest}", str(environment.pk), tuple(agent_ids))


def select_tasks(
    store: EpisodeStore,
    *,
    path: Path | None = None,
    count: int | None = None,
    seed: int = 0,
    related: bool = False,
    agents: int = 2,
) -> TaskSet:
    """The task set a study asks for: the one in ``path`` (all, or ``count`` of them drawn
    with ``seed``), else ``count`` tasks sampled from ``store``'s profiles
    (:func:`sample_tasks`). ``ValueError`` if neither is given."""
    if path is not None:
        tasks = read_task_set(path)
        return tasks if count is None else tasks.sample(count, seed=seed)
    if count is None:
        raise StudyInputError(
            "give a task set file (--tasks FILE, e.g. SOTOPIA's combinations) or how many "
            "tasks to sample from the stored profiles (--sample N)"
        )
    return sample_tasks(store, count, seed=seed, agents=agents, related=related)
