"""`EpisodeRecord`: the one value an episode is, wherever it goes.

The store, JSONL and ARE exports, rating, the command line and reports read and write
this value. It holds what happened — the completed events (the single source of truth),
the agents' model calls, and every verdict — and derives the rest on demand: usage,
scores, each viewer's transcript. ``version`` comes first; :func:`load_record` migrates
an older version on read and refuses a newer one.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
)

from sotopia_are import SotopiaAreError
from sotopia_are.evaluation import Evaluation
from sotopia_are.llm import LLMCall, Sampling, Usage
from sotopia_are.llm.accounting import UsageTally
from sotopia_are.messages import AgentAction
from sotopia_are.simulation.data_handler.exporter import convert_completed_event
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent, ExportedTrace
from sotopia_are.simulation.data_handler.reader import loads_json
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import (
    ConversationEntry,
    EpisodeResult,
    EpisodeSpec,
    EpisodeStatus,
    EpisodeViews,
    episode_trace,
    import_episode,
)
from sotopia_are.social.spec import check_safe_id

from .scores import Scores
from .verdict import Verdict

__all__ = [
    "RECORD_VERSION",
    "STATUS_KEY",
    "VERDICTS_KEY",
    "EpisodeRecord",
    "RecordFormatError",
    "RecordVersionError",
    "VerdictExistsError",
    "agent_calls",
    "judge_calls_of",
    "load_record",
    "migrate_v0",
    "record_from_are_json",
    "record_of_result",
    "usage_after",
]

RECORD_VERSION = 3
"""The version of :class:`EpisodeRecord` this code writes. Version 0 is the layout of the
stored episode documents before records existed (``EpisodeLog`` with ``evaluation``);
version 1 had no sampling settings (``agent_sampling``, ``Verdict.sampling``), which
version 2 reads as not recorded; version 2 had no ``problems`` (an import's findings kept
leniently), which version 3 reads as none."""

STATUS_KEY = "episode_status"
"""The key of an ARE export's ``metadata.runner_config`` holding the episode's status."""

VERDICTS_KEY = "episode_verdicts"
"""The key of an ARE export's ``metadata.runner_config`` holding the episode's verdicts
(each judge's scores, reasoning, failures, warnings and calls), when it has any."""


class RecordVersionError(SotopiaAreError, ValueError):
    """A record written by a newer sotopia_are than this one."""


class RecordFormatError(SotopiaAreError, ValueError):
    """Data that is not an episode record: not a JSON object, no or an unknown
    ``version``, nested too deeply, an old episode without its spec."""


class NotRatableError(SotopiaAreError, ValueError):
    """The episode did not complete (it failed or was interrupted): only a finished
    episode is rated."""


class VerdictExistsError(SotopiaAreError, ValueError):
    """The episode already has a verdict of this judge (same :attr:`Verdict.key`); rate it
    with another judge, or replace the verdict."""


class EpisodeRecord(BaseModel):
    """One episode: spec, who played with which model, how it went, what happened, and
    every verdict on it. Frozen; build changed copies with :meth:`with_verdict`.

    ``models`` maps each agent to its model (``""`` for a scripted or human agent) and
    ``agent_sampling`` each LLM agent to its :class:`~sotopia_are.llm.Sampling` (empty in
    records written before it was kept, whose calls' ``params`` still say what each
    request sent); ``reason`` is the termination reason of a complete episode, or why it
    failed or was interrupted; ``calls`` are the agents' model calls (the judges' are in
    their verdicts). ``verdicts`` are in the order they were given, one per judge
    (:attr:`Verdict.key`). ``problems`` are what the checks of an import found wrong
    with the record (``field: problem``, see :func:`~sotopia_are.record.record_problems`)
    when it was kept anyway (leniently): a flag every listing shows; empty for a played
    record.

    Example:
        ```python
        record = store.load(episode_id)       # or sa.run(...), sa.load_record(json_text)
        record.status, record.reason          # how it ended
        record.transcript()                   # what happened, private actions marked
        record.transcript("Aiko")             # what Aiko could see
        record.scores                         # the latest rated verdict's scores, naming its judge
        record.usage                          # tokens and cost of every call
        record.failed_or_unrated              # True: a study cannot count it
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = RECORD_VERSION
    episode_id: str
    spec: EpisodeSpec
    models: dict[str, str] = Field(default_factory=dict)
    agent_sampling: dict[str, Sampling] = Field(default_factory=dict)
    tag: str = ""
    scenario_id: str = ""
    status: EpisodeStatus = EpisodeStatus.RUNNING
    reason: str = ""
    failed_agent: str | None = None
    turns_played: int = 0
    # The serialiser below hides the default from the serialisation schema, which names the
    # stored export lines' form (see storage.exported.export_form): said again here.
    events: tuple[ExportedCompletedEvent, ...] = Field((), json_schema_extra={"default": []})
    calls: tuple[LLMCall, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    problems: tuple[str, ...] = ()

    # Checked here, not only in the spec: imported records name their own id and tag,
    # and the id becomes a file name on export.
    @field_validator("episode_id")
    @classmethod
    def _safe_episode_id(cls, episode_id: str) -> str:
        return check_safe_id(episode_id)

    @field_validator("tag")
    @classmethod
    def _safe_tag(cls, tag: str) -> str:
        return check_safe_id(tag, "tag", empty=True)

    @field_validator("spec")
    @classmethod
    def _plain_spec(cls, spec: EpisodeSpec) -> EpisodeSpec:
        # A subclass (a game's GameSpec) is kept as the EpisodeSpec it is, as a stored
        # record reads back, so that ``store.load(record.episode_id) == record``.
        if type(spec) is EpisodeSpec:
            return spec
        return EpisodeSpec.model_validate(spec.model_dump(exclude_unset=True))

    @field_serializer("events")
    def _exported_events(
        self, events: Sequence[ExportedCompletedEvent]
    ) -> tuple[ExportedCompletedEvent, ...]:
        # Exports a run's events not yet exported (see _EventsOnRead), then serialised by
        # the return type, the field's own: the record's serialisation schema, which names
        # the stored export lines' form (storage.exported.export_form), stays the same.
        return events.exported() if isinstance(events, _Exports) else tuple(events)

    # -- derived ---------------------------------------------------------------------------

    @property
    def verdict(self) -> Verdict | None:
        """The latest verdict, if any (rated or not; see :meth:`verdict_of` for the one
        scores come from)."""
        return self.verdicts[-1] if self.verdicts else None

    def verdict_of(self, judge: str | None = None) -> Verdict | None:
        """The verdict scores are read from: the latest *rated* verdict — of ``judge``
        (a judge model, or a whole :attr:`Verdict.key`) when given. None when there is
        no such verdict."""
        for verdict in reversed(self.verdicts):
            if verdict.rated and (judge is None or verdict.is_by(judge)):
                return verdict
        return None

    @property
    def scores(self) -> Scores:
        """The scores of :meth:`verdict_of` (the latest rated verdict) per agent, in rubric
        order, ``overall_score`` included, named by their judge and rubric
        (:attr:`Scores.source`); empty when no judge rated the episode. Another judge's:
        ``record.verdict_of(judge).scores``."""
        verdict = self.verdict_of()
        return verdict.scores if verdict is not None else Scores()

    @property
    def failed_or_unrated(self) -> bool:
        """Whether the episode did not complete, or no judge rated it: the one test of an
        episode a study cannot count."""
        return self.status is not EpisodeStatus.COMPLETE or not any(
            verdict.rated for verdict in self.verdicts
        )

    @functools.cached_property
    def usage(self) -> Usage:
        """Tokens, cost and latency of every model call: the agents' and every judge's."""
        judged = (call for verdict in self.verdicts for call in verdict.evaluation.calls)
        return usage_after(None, (*self.calls, *judged))

    def trace(self, *, annotation_date: float = 0.0) -> ExportedTrace:
        """The episode as ARE's ``ExportedTrace``: its scenario rebuilt from the spec, the
        completed events, the spec, the status and the verdicts (if any) under
        ``metadata.runner_config``."""
        trace = episode_trace(self.spec, annotation_date=annotation_date)
        config = {**(trace.metadata.runner_config or {}), STATUS_KEY: self.status.value}
        if self.verdicts:
            config[VERDICTS_KEY] = [verdict.model_dump(mode="json") for verdict in self.verdicts]
        metadata = trace.metadata.model_copy(update={"runner_config": config})
        return trace.model_copy(
            update={"completed_events": list(self.events), "metadata": metadata}
        )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied; what :attr:`views` derived is derived again."""
        copied = super().model_copy(update=update, deep=deep)
        # pydantic copies the instance dict, where cached_property keeps its value.
        copied.__dict__.pop("views", None)
        copied.__dict__.pop("usage", None)
        return copied

    @functools.cached_property
    def views(self) -> EpisodeViews:
        """Every participant's view, derived from the events through the one visibility
        function (the evaluator's view is omniscient)."""
        return EpisodeViews.of_exported(self.spec, self.events)

    @property
    def event_count(self) -> int:
        """``len(self.events)``, without exporting the events of a run not yet read (see
        :func:`record_of_result`)."""
        return len(self.__dict__["events"])

    @property
    def entries(self) -> list[ConversationEntry]:
        """Everything that happened in the conversation, in log order (omniscient)."""
        return list(self.views.entries)

    def actions(self) -> list[tuple[str, AgentAction]]:
        """Every ``(agent, action)`` in log order, doing nothing included."""
        return [(e.sender, e.action) for e in self.views.entries if e.action is not None]

    def transcript(self, viewer: str | None = None) -> str:
        """``viewer``'s transcript; with None the evaluator's (omniscient, private actions
        marked as private)."""
        return self.views.transcript(viewer)

    # -- changes ---------------------------------------------------------------------------

    def with_verdict(self, verdict: Verdict, *, replace: bool = False) -> EpisodeRecord:
        """This record with ``verdict`` added. A verdict of the same judge (same
        :attr:`Verdict.key`) is a :class:`VerdictExistsError` unless ``replace``, which
        drops the old."""
        if not replace:
            self.check_new_verdict(verdict.key)
        kept = tuple(v for v in self.verdicts if v.key != verdict.key)
        record = self.model_copy(update={"verdicts": (*kept, verdict)})
        if len(kept) == len(self.verdicts) and "usage" in self.__dict__:
            # Its calls are this record's and the verdict's, summed in that order: the
            # same floats as summing them all again.
            record.__dict__["usage"] = usage_after(self.usage, verdict.evaluation.calls)
        return record

    def check_new_verdict(self, key: str) -> None:
        """:class:`VerdictExistsError` if the judge of :attr:`Verdict.key` ``key`` already
        rated it."""
        if any(v.key == key for v in self.verdicts):
            raise VerdictExistsError(
                f"episode {self.episode_id} already has a verdict of {key}; rate with "
                "another judge (model, rubric or prompt), or pass replace=True to replace it"
            )

    def to_json(self, *, indent: int | None = None) -> str:
        """The record as JSON (``version`` first); :func:`load_record` reads it back."""
        return self.model_dump_json(indent=indent)


class _Exports:
    """The exports of a run's completed events, made when first read: the record of a run
    holds this in place of its ``events`` tuple until then (see :class:`_EventsOnRead`).

    Exporting an event validates seven models (~70,000 instructions a turn), and a batch
    worker never reads them: it stores each event's text as it happens, and the judge
    reads the run's views. Behaves as the tuple it stands for wherever pydantic passes
    the record's value on without reading the attribute: equality, ``repr``, hashing,
    pickling and copying (which give the tuple). Not thread-safe to make, but harmless:
    two threads would make equal tuples."""

    __slots__ = ("_events", "_exported")

    def __init__(self, events: tuple[CompletedEvent, ...]) -> None:
        self._events = events
        self._exported: tuple[ExportedCompletedEvent, ...] | None = None

    def exported(self) -> tuple[ExportedCompletedEvent, ...]:
        """The exports, made on the first call (``ScenarioExportError`` if one cannot
        be)."""
        if self._exported is None:
            self._exported = tuple(convert_completed_event(event) for event in self._events)
            self._events = ()  # the run's events (and through them its apps) are let go
        return self._exported

    def __len__(self) -> int:
        return len(self._exported if self._exported is not None else self._events)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Exports):
            other = other.exported()
        return self.exported() == other

    def __hash__(self) -> int:
        return hash(self.exported())

    def __repr__(self) -> str:
        return repr(self.exported())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self.exported(),))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[ExportedCompletedEvent, ...]:
        return copy.deepcopy(self.exported(), memo)


class _EventsOnRead:
    """``EpisodeRecord.events``: the tuple of exports, made (and kept in the instance's
    ``__dict__`` in place of the :class:`_Exports`) when first read. A data descriptor,
    so it is asked before the instance's ``__dict__``; setting is refused as the frozen
    model refuses it (pydantic refuses before it would get here)."""

    def __get__(
        self, record: EpisodeRecord | None, owner: type[EpisodeRecord]
    ) -> Any:  # the tuple, or this descriptor on the class
        if record is None:
            return self
        events = record.__dict__["events"]
        if type(events) is _Exports:
            events = record.__dict__["events"] = events.exported()
        return events

    def __set__(self, record: EpisodeRecord, value: object) -> None:
        raise AttributeError("an EpisodeRecord is frozen; use model_copy(update=...)")


# Set on the built class: pydantic takes a class attribute named as a field for its default.
type.__setattr__(EpisodeRecord, "events", _EventsOnRead())


def usage_after(usage: Usage | None, calls: Iterable[LLMCall]) -> Usage:
    """``Usage.of`` of the calls ``usage`` sums (none when None) followed by ``calls``:
    the same totals, the floats added in the same order, without a mapping per call
    (``UsageTally.add_call``)."""
    tally = UsageTally()
    if usage is not None:
        tally.add(vars(usage))  # from zero: the sums as they were
    for call in calls:
        tally.add_call(call)
    return tally.usage()


def record_of_result(
    result: EpisodeResult,
    *,
    models: Mapping[str, str] | None = None,
    sampling: Mapping[str, Sampling] | None = None,
    tag: str = "",
    scenario_id: str = "",
    events_stored: bool = False,
) -> EpisodeRecord:
    """The record of a finished run (no verdict yet): its events exported as ARE's
    completed events, and the agents' calls in participant order. ``sampling`` is the
    LLM agents' (by name); ``scenario_id`` defaults to the spec's ``name``, else the
    episode's id. An event that cannot be exported raises ``ScenarioExportError``.

    ``events_stored``: a store's recorder stored every event of the run as it happened,
    and so refused any that cannot be exported; the events are then exported when the
    record's ``events`` are first read (or the record is dumped, compared, pickled or
    copied deeply), not before: a batch worker never reads them."""
    chosen = dict(models or {})
    sampled = dict(sampling or {})
    record = EpisodeRecord(
        episode_id=result.episode_id,
        spec=result.spec,
        models={name: chosen.get(name, "") for name in result.spec.agent_names},
        agent_sampling={n: sampled[n] for n in result.spec.agent_names if n in sampled},
        tag=tag,
        scenario_id=scenario_id or result.spec.name or result.episode_id,
        status=result.status,
        reason=result.reason,
        failed_agent=result.failed_agent,
        turns_played=result.turns_played,
        events=(),  # set, as given (model_fields_set); replaced just below
        calls=agent_calls(result),
    )
    # The run's own events need no validation to be held (see _Exports).
    exports = _Exports(result.events)
    record.__dict__["events"] = exports if events_stored else exports.exported()
    # The views of these events are the run's own (EpisodeViews.of_exported rebuilds them
    # entry for entry, see EpisodeRecord.views): kept, rather than derived again by
    # decoding every event, which would cost a judge more than its prompt.
    record.__dict__["views"] = result.views
    return record


def agent_calls(result: EpisodeResult) -> tuple[LLMCall, ...]:
    """The agents' model calls of a run, in participant order (as a record keeps them)."""
    return tuple(
        call for name in result.spec.agent_names for call in result.call_records.get(name, ())
    )


def record_from_are_json(
    text: str | bytes, *, tag: str = "imported", reason: str = ""
) -> EpisodeRecord:
    """The record of an episode's ARE scenario JSON (as :meth:`EpisodeRecord.trace`
    writes it, or a live run's ``export_episode``): its spec, events, status (a file
    that does not say is complete) and verdicts; no models or agents' calls.
    :class:`~sotopia_are.simulation.data_handler.errors.ScenarioFormatError` for a file
    that is not such an export."""
    episode = import_episode(text)
    metadata = episode.scenario.metadata
    config = (metadata.runner_config if metadata is not None else None) or {}
    record = EpisodeRecord(
        episode_id=episode.spec.episode_id,
        spec=episode.spec,
        models=dict.fromkeys(episode.spec.agent_names, ""),
        tag=tag,
        scenario_id=episode.spec.name or episode.spec.episode_id,
        status=EpisodeStatus(config.get(STATUS_KEY, EpisodeStatus.COMPLETE.value)),
        reason=reason,
        events=tuple(convert_completed_event(event) for event in episode.events),
        verdicts=tuple(Verdict.model_validate(v) for v in config.get(VERDICTS_KEY) or ()),
    )
    # The file does not say how many turns were played: the agents' actions do (ENV
    # events may come between turns, so their times do not count).
    turns = [entry.turn for entry in record.entries if entry.action is not None]
    return record.model_copy(update={"turns_played": max(turns) + 1 if turns else 0})


def load_record(data: str | bytes | Mapping[str, Any]) -> EpisodeRecord:
    """An :class:`EpisodeRecord` from its JSON (text or parsed), migrating an older
    version. :class:`RecordVersionError` for a newer version; :class:`RecordFormatError`
    (or another ``ValueError``: broken JSON, fields that do not validate) for data that
    is not a record."""
    document = loads_json(data) if isinstance(data, str | bytes) else dict(data)
    if not isinstance(document, dict):
        raise RecordFormatError("an episode record is a JSON object")
    version = document.get("version")
    if version is None and "pk" in document:
        return migrate_v0(document)
    if version is None:
        raise RecordFormatError("not an episode record: it has no 'version'")
    if not isinstance(version, int) or version < 1:
        raise RecordFormatError(f"unknown episode record version {version!r}")
    if version > RECORD_VERSION:
        raise RecordVersionError(
            f"episode {document.get('episode_id', '?')!r} is a version {version} record, "
            f"written by a newer sotopia_are; this one reads up to version {RECORD_VERSION}. "
            "Upgrade sotopia_are (pip install -U sotopia-are)."
        )
    if version < RECORD_VERSION:
        # Versions 2 and 3 only added optional fields: an older record is one as it stands.
        document = {**document, "version": RECORD_VERSION}
    try:
        return EpisodeRecord.model_validate(document)
    except RecursionError:
        raise RecordFormatError("an episode record nested too deeply") from None


def migrate_v0(document: Mapping[str, Any]) -> EpisodeRecord:
    """The record of a version-0 episode document: a stored ``EpisodeLog`` (as the store
    and JSONL exports kept it before records existed) with its ``events`` and ``calls``.

    Its one verdict (``evaluation``) becomes a :class:`Verdict` holding the judge's calls
    (those scoped ``<id>/judge``); the other calls are the agents'. The turns played are
    not in it, so they are counted from the events' turns.
    """
    episode_id = str(document["pk"])
    if document.get("spec") is None:
        raise RecordFormatError(f"episode {episode_id} has no spec, so it cannot become a record")
    spec = EpisodeSpec.model_validate(document["spec"])
    calls = [LLMCall.model_validate(call) for call in document.get("calls") or []]
    judged = judge_calls_of(calls, episode_id)
    status = EpisodeStatus(document.get("status", EpisodeStatus.COMPLETE.value))
    verdicts: list[Verdict] = []
    evaluation = document.get("evaluation")
    if isinstance(evaluation, dict) and isinstance(evaluation.get("verdict"), dict):
        verdict = evaluation["verdict"]
        verdicts.append(
            Verdict(
                judge_model=str(document.get("evaluator_model") or verdict.get("model", "")),
                rubric=str(verdict.get("rubric", "")),
                evaluation=Evaluation.model_validate({**verdict, "calls": judged}),
                termination_reason=evaluation.get("termination"),
            )
        )
    record = EpisodeRecord(
        episode_id=episode_id,
        spec=spec,
        models={
            name: model
            for name, model in zip(
                document.get("agents") or [], document.get("models") or [], strict=False
            )
        },
        tag=str(document.get("tag") or ""),
        scenario_id=str(document.get("scenario_id") or ""),
        status=status,
        reason=str(document.get("termination_reason") or document.get("error") or ""),
        events=tuple(
            ExportedCompletedEvent.model_validate(e) for e in document.get("events") or []
        ),
        calls=tuple(c for c in calls if c not in judged),
        verdicts=tuple(verdicts),
    )
    turns = [entry.turn for entry in record.entries]
    return record.model_copy(update={"turns_played": max(turns) + 1 if turns else 0})


def judge_calls_of(calls: Sequence[LLMCall], episode_id: str) -> list[LLMCall]:
    """The calls among ``calls`` that a judge made for ``episode_id`` (scope
    ``<episode_id>/judge``, with ``/sample-<n>`` for repeated samples)."""
    prefix = f"{episode_id}/judge"
    return [c for c in calls if c.scope == prefix or (c.scope or "").startswith(prefix + "/")]
