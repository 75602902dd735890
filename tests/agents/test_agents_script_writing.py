"""The script-writing mode end to end: the local server writes, the runner replays."""

import json
from collections.abc import Callable

import pytest
from agents_support import MODEL

from sotopia_are.agents import ScriptWritingAgent, write_script
from sotopia_are.agents.script_writing import SCRIPT_MAX_TOKENS
from sotopia_are.llm import CHARS_PER_TOKEN, GenerationError, LLMSession
from sotopia_are.messages import AgentAction
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.testing import LocalLLMServer

SPEC = EpisodeSpec(
    episode_id="written",
    scenario="Two neighbours share a hedge that needs trimming.",
    agent_names=["Nia Cole", "Omar Haddad", "Pip Lund"],
    agent_backgrounds=["Nia owns a trimmer.", "Omar is allergic to pollen.", "Pip is new."],
    agent_goals=["Get Omar to pay half.", "Avoid touching the hedge.", "Make friends."],
    max_turns=6,
)
SCRIPT = (
    "Turn #1\n"
    'Nia Cole said: "The hedge is getting wild, Omar."\n'
    "Turn #2\n"
    "Omar Haddad [non-verbal communication] sneezes\n"
    "Turn #3\n"
    "Pip Lund [private to ['Nia Cole']] said: \"I could help, if you lend me the trimmer.\"\n"
    "Turn #4\n"
    "Nia Cole [action] hands Pip the trimmer\n"
    "Turn #5\n"
    "Omar Haddad left the conversation\n"
)


def answer(script: str) -> str:
    return json.dumps({"interactions": script})


async def test_a_written_script_replays_through_the_runner(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(answer(SCRIPT))
    written = await write_script(SPEC, MODEL, make_session())
    assert written.script.interactions == SCRIPT
    assert [item.speaker for item in written.actions][:3] == ["Nia Cole", "Omar Haddad", "Pip Lund"]
    assert written.call_records() == (written.call,) and written.call.ok
    assert written.call.template == "script_writing.j2"

    prompt = "\n".join(m["content"] for m in llm_server.chat_requests[0].messages)
    assert all(goal in prompt for goal in SPEC.agent_goals)  # the writer is omniscient
    assert "with a maximum of 6 turns" in prompt

    others = SPEC.model_copy(update={"agent_names": ["A", "B", "C"]})
    with pytest.raises(ValueError, match="are not the spec's"):
        written.replay_spec(others)
    result = await run_episode(written.replay_spec(SPEC), written.agents())
    assert result.status == "complete", result.reason
    assert result.actions() == [(item.speaker, item.action) for item in written.actions]
    assert "I could help" not in result.transcript("Omar Haddad")
    assert "I could help" in result.transcript("Nia Cole")
    assert all(calls == () for calls in result.call_records.values())


async def test_the_schema_sent_bounds_the_script_so_an_answer_fits_max_tokens(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(answer(SCRIPT))
    await write_script(SPEC, MODEL, make_session(output_mode="json_schema"))
    body = llm_server.chat_requests[0].body
    text = body["response_format"]["json_schema"]["schema"]["properties"]["interactions"]
    assert text["type"] == "string"
    assert text["maxLength"] / CHARS_PER_TOKEN < body["max_tokens"] == SCRIPT_MAX_TOKENS


async def test_an_unreadable_script_is_sent_back_with_its_line(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    broken = 'Turn #1\nNia Cole said: "Hello."\nTurn #2\nZed said: "Who am I?"\n'
    llm_server.enqueue(answer(broken), answer(SCRIPT))
    writer = ScriptWritingAgent(MODEL, make_session())
    written = await writer.write(SPEC.background())
    assert written.actions[-1].action == AgentAction(action_type="leave", argument="")
    retry = llm_server.chat_requests[1].messages
    assert retry[-2]["content"] == answer(broken)
    assert "line 4: speaker 'Zed' is not a participant" in retry[-1]["content"]
    [call] = writer.call_records()
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]


async def test_too_long_a_script_is_sent_back(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(answer(SCRIPT), answer('Nia Cole said: "Short."'))
    written = await write_script(SPEC.background(), MODEL, make_session(), max_turns=3)
    assert len(written.actions) == 1
    assert (
        "the script has 5 actions; write at most 3 turns"
        in (llm_server.chat_requests[1].messages[-1]["content"])
    )


async def test_a_script_that_never_parses_is_a_recorded_failure(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue("Once upon a time...", answer("nobody speaks here"))
    writer = ScriptWritingAgent(MODEL, make_session(output_attempts=2))
    with pytest.raises(GenerationError, match="no valid ScriptInteraction in 2 answers") as caught:
        await writer.write(SPEC)
    assert writer.call_records() == [caught.value.call]
    assert [a.error_kind for a in caught.value.attempts] == ["invalid_output"] * 2


async def test_a_writer_reports_its_calls_once_scoped_by_episode(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    llm_server.enqueue(answer(SCRIPT), answer(SCRIPT))
    session = make_session()
    writer = ScriptWritingAgent(MODEL, session)
    first = await writer.write(SPEC)
    second = await writer.write(SPEC.model_copy(update={"episode_id": "written-2"}))
    assert writer.call_records() == [first.call, second.call] == session.calls
    assert [call.scope for call in writer.call_records()] == ["written", "written-2"]
