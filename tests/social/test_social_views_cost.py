"""Views render each entry once: a turn costs time in the entries it adds, not in the
length of the episode so far (design rule 7), and the transcripts stay byte-identical to
rendering the entries from scratch."""

import pytest
from social_support import NAMES, NOTHING, PlaybackAgent, make_spec, say

from sotopia_are.social import ConversationEntry, render_entries, run_episode

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
