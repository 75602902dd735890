"""ConversationApp: one AGENT event per action, loud validation, ENV tools, registry."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction
from sotopia_are.messages.action import ActionType
from sotopia_are.simulation.apps.registry import default_app_registry
from sotopia_are.simulation.environment import Environment, EnvironmentConfig
from sotopia_are.simulation.notification_system import BaseNotificationSystem, MessageType
from sotopia_are.simulation.types import Event, EventType, OperationType
from sotopia_are.social import ConversationApp
from sotopia_are.social.entries import entry_of

NAMES = ["Ana", "Bo", "Cy"]
NOTIFIED = BaseNotificationSystem(ConversationApp(NAMES).notification_config())


def hosted() -> tuple[Environment, ConversationApp]:
    app = ConversationApp(NAMES)
    env = Environment(
        EnvironmentConfig(queue_based_loop=True, duration=None, verbose=False),
        notification_system=BaseNotificationSystem(app.notification_config()),
    )
    env.register_apps([app])
    return env, app


def test_each_action_is_exactly_one_completed_agent_write_event() -> None:
    env, app = hosted()
    app.act("Ana", "speak", "Hello all")
    app.act("Bo", "speak", "Psst", to=["Cy"])
    log = env.event_log.list_view()
    assert [e.event_type for e in log] == [EventType.AGENT, EventType.AGENT]
    assert all(e.action is not None and e.action.operation_type is OperationType.WRITE for e in log)
    assert log[1].get_args() == {
        "sender": "Bo",
        "action_type": "speak",
        "argument": "Psst",
        "to": ["Cy"],
    }
    assert all(e.function_name() == "act" and not e.failed() for e in log)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (("Zed", "speak", "hi", None), "'Zed' is not a participant"),
        (("Ana", "speak", "hi", ["Zed"]), "unknown recipient 'Zed' of a private message"),
        (("Ana", "speak", "hi", ["Ana"]), "cannot send a private message to themselves"),
        (("Ana", "shout", "hi", None), "action_type"),
    ],
)
def test_invalid_actions_raise_and_are_logged_as_failed(
    call: tuple[str, str, str, list[str] | None], message: str
) -> None:
    env, app = hosted()
    sender, action_type, argument, to = call
    with pytest.raises(ValueError, match=message):
        app.act(sender, action_type, argument, to)  # type: ignore[arg-type]
    [event] = env.event_log.list_view()
    assert event.failed() and message.split("'")[0] in (event.get_exception() or "")


def test_an_agent_that_left_cannot_act_again() -> None:
    _, app = hosted()
    app.act("Ana", "leave", "")
    assert app.active_participants() == ("Bo", "Cy")
    with pytest.raises(ValueError, match="'Ana' has left the conversation"):
        app.act("Ana", "speak", "wait, one more thing")


def test_env_tools_run_as_scheduled_env_events_and_notify() -> None:
    env, app = hosted()
    env.schedule(
        [
            Event.from_function(
                app.announce, content="The phone rings.", perceivers=["Ana"]
            ).at_absolute_time(3.0),
            Event.from_function(
                app.deliver_message, sender="Dee", content="Running late", to=["Bo"]
            ).at_absolute_time(4.0),
        ]
    )
    env.run_until(5.0)
    log = env.event_log.list_view()
    assert [(e.event_type, e.function_name(), e.event_time) for e in log] == [
        (EventType.ENV, "announce", 3.0),
        (EventType.ENV, "deliver_message", 4.0),
    ]
    queue = env.notification_system.message_queue.list_view()
    assert [(m.message_type, m.message) for m in queue] == [
        (MessageType.USER_MESSAGE, "The phone rings."),
        (MessageType.USER_MESSAGE, "Running late"),
    ]


@pytest.mark.parametrize(
    ("function", "args", "message"),
    [
        ("announce", {"content": "x", "perceivers": ["Zed"]}, "not participants"),
        ("deliver_message", {"sender": "Ana", "content": "x", "to": ["Bo"]}, "outside"),
        ("deliver_message", {"sender": "Dee", "content": "x", "to": []}, "at least one"),
    ],
)
def test_env_tools_check_their_audience(
    function: str, args: dict[str, object], message: str
) -> None:
    env, app = hosted()
    env.schedule(Event.from_function(getattr(app, function), **args))
    env.run_until(1.0)
    [event] = env.event_log.list_view()
    assert event.failed() and message in (event.get_exception() or "")


def test_participants_must_be_distinct_and_not_the_environment() -> None:
    with pytest.raises(ValueError, match="distinct"):
        ConversationApp(["Ana", "Ana"])
    with pytest.raises(ValueError, match="reserved"):
        ConversationApp(["Ana", "Environment"])


def test_registered_for_the_importer_and_state_round_trips() -> None:
    assert default_app_registry.resolve("ConversationApp") is ConversationApp
    _, app = hosted()
    app.act("Cy", "leave", "")
    fresh = ConversationApp()
    fresh.load_state(app.get_state())
    assert fresh.participants == tuple(NAMES) and fresh.active_participants() == ("Ana", "Bo")


_ARGUMENTS = st.text(st.sampled_from(["a", " ", "\n", "\r", "é", '"']), max_size=8)


@given(
    st.sampled_from(["none", "speak", "non-verbal communication", "action", "leave"]),
    _ARGUMENTS,
    st.sampled_from([None, [], ["Bo"], ["Bo", "Cy"]]),
)
def test_an_acts_entry_is_the_action_of_its_logged_arguments(
    action_type: ActionType, argument: str, to: list[str] | None
) -> None:
    # The entry takes the action the app validated (see take_validated_action): the one
    # its logged arguments make, and made afresh for any other reader of the log.
    env, app = hosted()
    try:
        app.act("Ana", action_type, argument, to)
    except ValueError:
        return  # refused (a line break in an action's description): no entry
    [event] = env.event_log.list_view()
    args = event.get_args()
    expected = AgentAction(
        action_type=args["action_type"], argument=args["argument"], to=args["to"] or None
    )
    first = entry_of(event, app_name=app.name, turn_seconds=1.0, notifications=NOTIFIED)
    again = entry_of(event, app_name=app.name, turn_seconds=1.0, notifications=NOTIFIED)
    assert first is not None and again is not None
    assert first.action == again.action == expected
    assert first.action is not again.action  # taken once


def test_an_action_validated_for_other_arguments_is_not_taken() -> None:
    _env, app = hosted()
    app.act("Ana", "speak", "one")
    assert app.take_validated_action("speak", "two", None) is None
    app.act("Ana", "speak", "one", ["Bo"])
    assert app.take_validated_action("speak", "one", None) is None
    app.act("Ana", "speak", "one", ["Bo"])
    taken = app.take_validated_action("speak", "one", ["Bo"])
    assert taken == AgentAction(action_type="speak", argument="one", to=["Bo"])


class _Text(str):
    """A str subclass: validation makes it a plain str, so the plain way must not take it."""


_TEXTS = st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\t", "…", "\ud800", "x"]))
_ACTION_TYPES = st.sampled_from(["none", "speak", "non-verbal communication", "action", "leave"])
# Mostly the plain form (what the plain way takes), and around it what it must leave.
_KINDS = st.one_of(
    _ACTION_TYPES,
    _ACTION_TYPES,
    _ACTION_TYPES,
    st.sampled_from(["Speak", "", "speak ", "shout"]),
    st.builds(_Text, _ACTION_TYPES),
    st.integers(),
)
_ARGUMENTS = st.one_of(_TEXTS, _TEXTS, _TEXTS, st.builds(_Text, _TEXTS), st.none(), st.integers())
_RECIPIENTS = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.just([]),
    st.just(()),
    st.lists(st.sampled_from(["Bo", "Cy", "Ana", "Zed"])),
)


@settings(max_examples=500)
@given(kind=_KINDS, argument=_ARGUMENTS, to=_RECIPIENTS)
def test_an_action_made_the_plain_way_is_the_validated_action(
    kind: object, argument: object, to: object
) -> None:
    # The law the app's plain way rests on: whatever it makes is what validation makes of
    # the same fields (every field, its type, the fields set), and whatever validation
    # refuses it leaves to validation.
    from sotopia_are.social.conversation_app import _plain_action

    plain = _plain_action(kind, argument, to)
    try:
        validated = AgentAction.model_validate(
            {"action_type": kind, "argument": argument, "to": to},
            context={"agent_names": NAMES, "sender": "Ana"},
        )
    except ValueError:
        assert plain is None
        return
    if plain is not None:
        assert plain == validated
        assert plain.model_fields_set == validated.model_fields_set
        assert [type(v) for v in plain.__dict__.values()] == [
            type(v) for v in validated.__dict__.values()
        ]
        assert plain.model_dump() == validated.model_dump()


def test_the_common_actions_are_made_the_plain_way() -> None:
    from sotopia_are.social.conversation_app import _plain_action

    assert _plain_action("speak", "Hi …", None) == AgentAction(action_type="speak", argument="Hi …")
    assert _plain_action("action", "  waves  ", None) == AgentAction(
        action_type="action", argument="waves"
    )
    assert _plain_action("speak", "Hi", ["Bo"]) is None  # recipients: checked by validation
    assert _plain_action("action", "two\nlines", None) is None  # refused by validation


def test_an_action_that_is_not_plain_is_still_checked_against_the_participants() -> None:
    _env, app = hosted()
    with pytest.raises(ValueError, match="unknown recipient"):
        app.act("Ana", "speak", "Psst", to=["Zed"])
    with pytest.raises(ValueError, match="single line"):
        app.act("Ana", "action", "two\nlines")
    with pytest.raises(ValueError):
        app.act("Ana", "shout", "Hi")
