"""A run's record exports its events when they are first read: until then it is the same
record as one that exported them at once, whatever is done with it first."""

import copy
import pickle
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_record_views import ENV_EVENTS, NAMES, actions, play, street_party

from sotopia_are.messages import AgentAction
from sotopia_are.record import EpisodeRecord, load_record, record_of_result
from sotopia_are.simulation.data_handler.exporter import convert_completed_event
from sotopia_are.social import EpisodeResult, EpisodeSpec

# What a reader may do first with a record; each gives what it gives of the eager record.
FIRST_USES: dict[str, Callable[[EpisodeRecord], Any]] = {
    "events": lambda r: (type(r.events), r.events),
    "json": lambda r: r.to_json(),
    "dump": lambda r: r.model_dump(),
    "dump-some": lambda r: r.model_dump_json(include={"events", "calls"}),
    "dump-set": lambda r: (r.model_fields_set, r.model_dump_json(exclude_unset=True)),
    "repr": repr,
    # A run's record holds the run's views (their locks pickle and copy deeply with
    # neither): model_copy() leaves them out, not the events.
    "pickle": lambda r: pickle.loads(pickle.dumps(r.model_copy())),
    "deepcopy": lambda r: copy.deepcopy(r.model_copy()),
    "copy-deep": lambda r: r.model_copy().model_copy(deep=True),
    "copy-then-json": lambda r: r.model_copy(update={"tag": "t"}).to_json(),
    "verdict-less-trace": lambda r: r.trace().model_dump_json(),
    "load": lambda r: load_record(r.to_json()),
    "views": lambda r: r.views.transcript(),
    "len": lambda r: (r.event_count, len(r.events)),
}


def _result(lines: dict[str, list[AgentAction]], env_events: list[dict[str, Any]]) -> EpisodeResult:
    return play(street_party("lazy-1", env_events), lines)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.fixed_dictionaries({name: actions(name) for name in NAMES}),
    env_events=ENV_EVENTS,
    use=st.sampled_from(sorted(FIRST_USES)),
)
def test_a_lazily_exported_record_is_the_eager_one(
    lines: dict[str, list[AgentAction]], env_events: list[dict[str, Any]], use: str
) -> None:
    result = _result(lines, env_events)
    # Without a store that stored the events, they are exported at once: an event that
    # cannot be is the ScenarioExportError of record_of_result, before any judge is paid.
    eager = record_of_result(result)
    assert type(eager.__dict__["events"]) is tuple
    assert eager.events == tuple(convert_completed_event(event) for event in result.events)
    first = FIRST_USES[use]

    lazy = record_of_result(result, events_stored=True)
    assert lazy.event_count == len(result.events)
    assert type(lazy.__dict__["events"]) is not tuple  # counting exported nothing
    assert first(lazy) == first(eager)
    # Compared both ways round, before and after the events are read.
    stored = [record_of_result(result, events_stored=True) for _ in range(2)]
    for before in stored:
        assert before == eager and eager == before
    lazy = record_of_result(result, events_stored=True)
    assert lazy.events == eager.events
    assert lazy == eager and lazy.to_json() == eager.to_json()
    assert type(lazy.__dict__["events"]) is tuple  # kept as read


def test_a_records_events_cannot_be_set() -> None:
    record = EpisodeRecord(
        episode_id="e-1",
        spec=EpisodeSpec(
            episode_id="e-1",
            scenario="Two friends.",
            agent_names=["A", "B"],
            agent_backgrounds=["a", "b"],
            agent_goals=["x", "y"],
        ),
    )
    try:
        record.events = ()
    except ValueError as error:  # pydantic's frozen instance error
        assert "frozen" in str(error)
    else:
        raise AssertionError("set the events of a frozen record")


def test_the_serialisation_schema_is_the_declared_one() -> None:
    # The serialisation schema names the form of the export lines a store keeps
    # (storage.exported.export_form): a serialiser that changed a field's schema there
    # would make every line stored before it be read again and exported the full way.
    validation = EpisodeRecord.model_json_schema(mode="validation")["properties"]
    serialization = EpisodeRecord.model_json_schema(mode="serialization")["properties"]
    assert serialization == validation
