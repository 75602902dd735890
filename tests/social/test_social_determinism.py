"""Record → replay gives the same log; export → import → replay gives the same log."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from social_support import MODEL, NAMES, make_spec

from sotopia_are.agents import LLMAgent, ScriptedAgent
from sotopia_are.llm import LLMConfig, LLMSession, RetryPolicy
from sotopia_are.simulation.data_handler.errors import ScenarioFormatError
from sotopia_are.simulation.data_handler.exporter import JsonScenarioExporter
from sotopia_are.social import (
    EpisodeResult,
    EpisodeSpec,
    export_episode,
    import_episode,
    logged_actions,
    run_episode,
)
from sotopia_are.testing import LocalLLMServer

MIRA, TOMAS, PRIYA = NAMES


def chatty(body: Mapping[str, Any]) -> str:
    """Each agent answers with its name and how many requests it has seen, sometimes
    privately (so the log holds private actions too)."""
    system = body["messages"][0]["content"]
    name = next(n for n in NAMES if system.startswith(f"You play {n} in a conversation"))
    text = "\n".join(m["content"] for m in body["messages"])
    count = text.count('said: "')
    others = [n for n in NAMES if n != name and n in text]
    to = [others[0]] if count % 3 == 2 and others else None
    return json.dumps({"action_type": "speak", "argument": f"{name} #{count}", "to": to})


def config(server: LocalLLMServer) -> LLMConfig:
    return LLMConfig(
        api_base=server.url, api_key="sk-test", retry=RetryPolicy(max_attempts=1), timeout_s=5
    )


def spec_with_everything() -> EpisodeSpec:
    return make_spec(
        3,
        turn_policy="random",
        seed=3,
        max_turns=7,
        env_events=[
            {"turn": 2, "content": "The lights flicker.", "to": [PRIYA]},
            {"turn": 4, "kind": "message", "sender": "Dee", "content": "Call me", "to": [MIRA]},
        ],
    )


async def llm_episode(session: LLMSession, spec: EpisodeSpec) -> EpisodeResult:
    return await run_episode(spec, [LLMAgent(n, MODEL, session) for n in spec.agent_names])


async def test_a_recorded_run_replays_to_the_same_log(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.rule = chatty
    recording = tmp_path / "episode.jsonl"
    spec = spec_with_everything()
    recorder = LLMSession.recording(recording, config(llm_server))
    recorded = await llm_episode(recorder, spec)
    recorder.close()
    served = len(llm_server.chat_requests)
    assert recorded.status == "complete" and served == len(recorder.calls) == 7
    assert any(action.to for _, action in recorded.actions())

    replayed = await llm_episode(LLMSession.replaying(recording, config(llm_server)), spec)
    assert len(llm_server.chat_requests) == served  # answered from the recording
    assert replayed.canonical_log() == recorded.canonical_log()
    assert export_episode(replayed) == export_episode(recorded)
    assert replayed.transcript() == recorded.transcript()


async def test_export_import_replay_gives_the_same_log(llm_server: LocalLLMServer) -> None:
    llm_server.rule = chatty
    spec = spec_with_everything()
    original = await llm_episode(LLMSession(config(llm_server)), spec)
    text = export_episode(original, indent=2)
    document = json.loads(text)
    assert document["apps"][0]["class_name"] == "ConversationApp"
    assert document["apps"][0]["app_state"] == {"participants": NAMES, "left": []}
    assert [e["action"]["function"] for e in document["events"]] == [
        "announce",
        "deliver_message",
    ]

    imported = import_episode(text)
    assert imported.spec == spec
    assert [e.to_dict() for e in imported.events] == [e.to_dict() for e in original.events]
    exporter = JsonScenarioExporter()
    again = exporter.export_to_json(
        original.environment,
        imported.scenario,
        spec.episode_id,
        completed_events=imported.events,
        indent=2,
    )
    assert again == text  # export → import → export is stable

    actions = logged_actions(imported.spec, imported.events)
    agents = [ScriptedAgent(name, actions[name]) for name in imported.spec.agent_names]
    replayed = await run_episode(imported.spec, agents)
    assert replayed.canonical_log() == original.canonical_log()


async def test_importing_a_file_without_an_episode_spec_is_a_format_error() -> None:
    spec = make_spec(max_turns=1)
    result = await run_episode(spec, [ScriptedAgent(n, []) for n in spec.agent_names])
    assert result.status == "failed"  # the first scripted agent has nothing to say
    document = json.loads(export_episode(result))
    document["metadata"]["runner_config"] = None
    with pytest.raises(ScenarioFormatError, match="not exported from a social episode"):
        import_episode(json.dumps(document))
    document["metadata"]["runner_config"] = {"episode_spec": {"scenario": "no names"}}
    with pytest.raises(ScenarioFormatError, match="invalid episode spec"):
        import_episode(json.dumps(document))
