"""The agent's prompt lists exactly the actions available, speaking first, in one order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.agents import ACTION_TEMPLATE
from sotopia_are.llm.templates import PromptLibrary

ORDER = ["speak", "non-verbal communication", "action", "none", "leave"]
LIBRARY = PromptLibrary()


@given(
    st.lists(st.sampled_from(ORDER), unique=True).flatmap(st.permutations),
    st.sampled_from(["", "  \n", 'Turn #0: Bo said: "Hi."\n']),
    st.lists(st.sampled_from(["Bo", "Cy"]), unique=True),
)
def test_the_prompt_lists_the_available_actions_in_order(
    available: list[str], transcript: str, recipients: list[str]
) -> None:
    [_system, user] = LIBRARY.render(
        ACTION_TEMPLATE,
        {
            "agent_name": "Ann",
            "turn_number": 3,
            "background": "A yard sale.",
            "transcript": transcript,
            "available_actions": available,
            "recipients": recipients,
        },
    )
    listed = [line.split(":")[0][2:] for line in user.content.splitlines() if line.startswith("- ")]
    assert listed == [kind for kind in ORDER if kind in available]
    seen = "has seen of the conversation so far:\n" + transcript.strip()
    assert (seen in user.content) == bool(transcript.strip())
    assert ("The conversation has not started yet." in user.content) != bool(transcript.strip())
    assert ("privately" in user.content) == (len(recipients) > 1)
