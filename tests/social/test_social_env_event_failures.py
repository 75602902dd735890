"""ENV events: a spec that would fail at run time is rejected up front, and an ENV event
that fails anyway ends its episode as failed instead of vanishing from the conversation."""

from typing import Any

import pytest
from pydantic import ValidationError
from social_support import NAMES, PlaybackAgent, make_spec, say

from sotopia_are.social import ENVIRONMENT_SENDER, EpisodeSpec, ScheduledEnvEvent, run_episode

MIRA, TOMAS, _ = NAMES


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {
                "turn": 1,
                "kind": "message",
                "sender": ENVIRONMENT_SENDER,
                "content": "x",
                "to": [MIRA],
            },
            "reserved",
        ),
        ({"turn": 1, "content": "x", "to": []}, "use null for everyone"),
        ({"turn": 1, "kind": "message", "sender": "Bank", "content": "x", "to": []}, "recipient"),
        ({"turn": 1, "content": "x", "to": ["Nobody"]}, "non-participants"),
        (
            {"turn": 1, "kind": "message", "sender": "Bank", "content": "x", "to": ["Nobody"]},
            "non-participants",
        ),
    ],
)
def test_env_events_that_could_not_run_are_rejected_by_the_spec(
    event: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        make_spec(env_events=[event])


def test_the_environment_sender_name_is_not_an_agent_name() -> None:
    with pytest.raises(ValidationError, match="reserved"):
        EpisodeSpec.model_validate(
            make_spec().model_dump() | {"agent_names": [MIRA, ENVIRONMENT_SENDER]}
        )


async def test_a_failing_env_event_fails_the_episode_naming_the_event_and_error() -> None:
    # Validation makes this unreachable from a spec; model_construct bypasses it to stand
    # in for any ENV event that raises at run time.
    bad = ScheduledEnvEvent.model_construct(
        turn=1, kind="message", content="Your plot fee is due.", to=[MIRA], sender=MIRA
    )
    spec = make_spec(max_turns=4).model_copy(update={"env_events": [bad]})
    agents = [PlaybackAgent(MIRA, [say("a")]), PlaybackAgent(TOMAS, [say("b")])]
    result = await run_episode(spec, agents)
    assert result.status == "failed"
    assert result.failed_agent is None
    assert result.turns_played == 1
    failed = [e for e in result.events if e.failed()]
    assert len(failed) == 1
    assert result.reason is not None
    assert failed[0].event_id in result.reason
    assert "deliver_message is for senders outside the conversation" in result.reason
