"""Views render each entry once: a turn costs time in the entries it adds, not in the
length of the episode so far (design rule 7), and the transcripts stay byte-identical to
rendering the entries from scratch."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from social_support import NAMES, NOTHING, PlaybackAgent, make_spec, say

from sotopia_are.messages import AgentAction
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.social import ConversationEntry, render_entries, run_episode
from sotopia_are.social.views import EpisodeViews

MIRA, TOMAS, PRIYA = NAMES


async def test_each_entry_is_rendered_once_however_long_the_episode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    renders = 0
    render = ConversationEntry.render

    def counting(entry: ConversationEntry) -> str:
        nonlocal renders
        renders += 1
        return render(entry)

    monkeypatch.setattr(ConversationEntry, "render", counting)
    turns = 60
    spec = make_spec(max_turns=turns, max_stale_turns=turns)
    agents = [PlaybackAgent(name, [say(f"{name} {i}") for i in range(turns)]) for name in NAMES[:2]]
    result = await run_episode(spec, agents)
    assert result.turns_played == turns
    assert renders == len(result.views.entries) == turns


async def test_incremental_transcripts_equal_rendering_from_scratch() -> None:
    spec = make_spec(
        3,
        max_turns=6,
        max_stale_turns=6,
        env_events=[
            {"turn": 2, "content": "Rain starts.", "to": [PRIYA]},
            {"turn": 3, "content": "Sun."},
        ],
    )
    agents = [
        PlaybackAgent(MIRA, [say("hello"), say("psst", to=[TOMAS])]),
        PlaybackAgent(TOMAS, [NOTHING, say("yes")]),
        PlaybackAgent(PRIYA, [say("hm", to=[MIRA]), NOTHING]),
    ]
    result = await run_episode(spec, agents)
    for agent in agents:
        view = result.view(agent.name)
        transcript = view.transcript()
        assert transcript == render_entries(view.entries)
        # Each transcript shown during play was the final one as it stood then.
        assert all(transcript.startswith(turn.transcript) for turn in agent.turns)
    assert result.views.transcript() == render_entries(result.views.entries)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.none() | st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True),
            st.sampled_from(["speak", "none", "action"]),
            st.sampled_from(NAMES),  # who is asked to act after this entry
        ),
        max_size=12,
    )
)
def test_what_an_agent_newly_perceived_is_derived_from_its_entries(
    steps: list[tuple[str, list[str] | None, str, str]],
) -> None:
    """Law: ``observation.last_turn`` after turn 0 is the lines of the entries visible to
    the agent since it last acted, others' and not doing nothing, as rendered."""
    spec = make_spec(3)
    views = EpisodeViews(spec, "ConversationApp", BaseNotificationSystem())
    seen = dict.fromkeys(NAMES, 0)
    for number, (sender, to, kind, asked) in enumerate(steps, start=1):
        argument = "" if kind == "none" else f"{sender} {number}"
        action = AgentAction(action_type=kind, argument=argument, to=to)
        audience = None if to is None else tuple(to)
        views.add_entry(ConversationEntry(number, f"e{number}", sender, audience, action=action))
        expected = "\n".join(
            entry.render()
            for entry in views.entries[seen[asked] :]
            if entry.visible_to(asked) and not entry.is_nothing and entry.sender != asked
        )
        turn = views.agent_turn(asked, number)
        seen[asked] = len(views.entries)
        assert turn.observation.last_turn == expected


def test_a_views_turn_is_the_turn_its_constructor_makes() -> None:
    # The views make each turn of its fields without the frozen dataclass's __init__:
    # the same value in every way a reader has of it, and still frozen.
    import copy
    import dataclasses
    import pickle

    from sotopia_are.social import AgentTurn
    from sotopia_are.social.protocol import turn_of_fields

    spec = make_spec()
    views = EpisodeViews(spec, "conversation", BaseNotificationSystem())
    made = views.agent_turn(MIRA, 0)
    fields = {field.name: getattr(made, field.name) for field in dataclasses.fields(AgentTurn)}
    constructed = AgentTurn(**fields)
    assert made == constructed and repr(made) == repr(constructed)
    assert vars(made) == vars(constructed) and list(vars(made)) == list(vars(constructed))
    assert dataclasses.asdict(made) == dataclasses.asdict(constructed)
    assert pickle.loads(pickle.dumps(made)) == constructed
    assert copy.deepcopy(made) == constructed
    assert dataclasses.replace(made, transcript="x") == dataclasses.replace(
        constructed, transcript="x"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.transcript = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        turn_of_fields({"agent_name": MIRA})


def test_entries_and_states_made_of_their_slots_are_the_constructors() -> None:
    # Made slot by slot (every logged call makes an entry, every turn a state): equal to
    # what the frozen dataclass's constructor makes, in every field, and still frozen.
    import dataclasses
    import pickle

    from sotopia_are.social.entries import _new_entry
    from sotopia_are.social.termination import EpisodeState, state_of

    action = AgentAction(action_type="speak", argument="Hi")
    cases = [
        (
            _new_entry(3, "e1", MIRA, None, action=action),
            ConversationEntry(3, "e1", MIRA, None, action=action),
        ),
        (
            _new_entry(4, "e2", "Environment", (TOMAS,), content="rain"),
            ConversationEntry(4, "e2", "Environment", (TOMAS,), content="rain"),
        ),
    ]
    history = [(MIRA, action)]
    cases.append(
        (
            state_of(2, (MIRA, TOMAS), (MIRA,), 1, ((MIRA, action),), history),
            EpisodeState(2, (MIRA, TOMAS), (MIRA,), 1, ((MIRA, action),), history),
        )
    )
    for made, constructed in cases:
        assert made == constructed and repr(made) == repr(constructed)
        assert dataclasses.astuple(made) == dataclasses.astuple(constructed)
        assert pickle.loads(pickle.dumps(made)) == constructed
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, dataclasses.fields(made)[0].name, 9)
    assert cases[-1][0].actions is history  # the runner's history, as the constructor keeps it
