"""Record/replay reproduces a run exactly; the cache answers repeated requests."""

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from sotopia_are.llm import (
    LLMConfig,
    LLMRequest,
    LLMResponse,
    LLMSession,
    Message,
    RecordedExchange,
    Recorder,
    Replayer,
    ReplayMissError,
    ResponseCache,
)
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"


class Move(BaseModel):
    action: str


async def _run(session: LLMSession) -> list[object]:
    """A small 'episode': text calls, a structured call that needs a repair, in order."""
    values: list[object] = []
    for turn in range(3):
        result = await session.generate(MODEL, "test/plain.j2", {"word": f"turn {turn}"})
        values.append(result.value)
    move = await session.generate(MODEL, "test/plain.j2", {"word": "move"}, Move)
    values.append(move.value)
    return values


async def test_replay_reproduces_a_recorded_run_without_the_network(
    tmp_path: Path, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "run.jsonl"
    llm_server.enqueue("one", "two", "three", "not json", '{"action": "leave"}')
    recorder = Recorder(recording)
    recorded = make_session({"recorder": recorder})
    original = await _run(recorded)
    recorder.close()
    lines = recording.read_text().splitlines()
    assert len(lines) == 5
    assert RecordedExchange.model_validate_json(lines[3]).response.text == "not json"

    llm_server.stop()  # replay must never touch the network
    replayed = LLMSession.replaying(recording, recorded.config, prompts=recorded.prompts)
    assert await _run(replayed) == original == ["one", "two", "three", Move(action="leave")]
    assert [c.raw_text for c in replayed.calls] == [c.raw_text for c in recorded.calls]
    assert [len(c.attempts) for c in replayed.calls] == [1, 1, 1, 2]
    assert {a.source for c in replayed.calls for a in c.attempts} == {"replay"}
    assert replayed.replayer is not None and replayed.replayer.remaining == 0


async def test_replay_refuses_an_unrecorded_request(
    tmp_path: Path, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "run.jsonl"
    recorder = Recorder(recording)
    await make_session({"recorder": recorder}).generate(MODEL, "test/plain.j2", {"word": "a"})
    recorder.close()
    session = make_session({"replayer": Replayer(recording)})
    with pytest.raises(ReplayMissError, match="it was not recorded") as info:
        await session.generate(MODEL, "test/plain.j2", {"word": "b"})
    assert "Say b." in str(info.value) and str(recording) in str(info.value)
    assert info.value.call is not None and info.value.call.error_type == "ReplayMissError"
    await session.generate(MODEL, "test/plain.j2", {"word": "a"})
    with pytest.raises(ReplayMissError, match="all its recorded answers were used"):
        await session.generate(MODEL, "test/plain.j2", {"word": "a"})
    assert len(llm_server.chat_requests) == 1  # only the recording run reached the server


async def test_replay_keys_ignore_the_endpoint_but_not_the_params(
    tmp_path: Path, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "run.jsonl"
    with Recorder(recording) as recorder:
        await make_session({"recorder": recorder}).generate(MODEL, "test/plain.j2", {"word": "a"})
    elsewhere = LLMConfig(api_base="http://127.0.0.1:9/v1")
    session = LLMSession(elsewhere, prompts=make_session().prompts, replayer=Replayer(recording))
    assert (await session.generate(MODEL, "test/plain.j2", {"word": "a"})).value == "Say a."
    with pytest.raises(ReplayMissError):
        await session.generate(MODEL, "test/plain.j2", {"word": "a"}, params={"temperature": 1})


async def test_scoped_sessions_share_the_recorder_and_report_to_the_parent(
    tmp_path: Path, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "batch.jsonl"
    batch = make_session({"recorder": Recorder(recording)})
    episodes = [batch.scoped(f"episode-{i}") for i in range(3)]
    await asyncio.gather(*(e.generate(MODEL, "test/plain.j2", {"word": e.scope}) for e in episodes))
    batch.close()
    assert [len(e.calls) for e in episodes] == [1, 1, 1]
    assert len(batch.calls) == 3 and batch.usage().calls == 3
    assert {c.scope for c in batch.calls} == {"episode-0", "episode-1", "episode-2"}
    scopes = {RecordedExchange.model_validate_json(x).scope for x in recording.open()}
    assert scopes == {"episode-0", "episode-1", "episode-2"}


async def test_cache_hits_do_not_reach_the_server(
    tmp_path: Path, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    cache = ResponseCache(tmp_path / "cache.jsonl")
    session = make_session({"cache": cache})
    first = await session.generate(MODEL, "test/plain.j2", {"word": "a"})
    second = await session.generate(MODEL, "test/plain.j2", {"word": "a"})
    other = await session.generate(MODEL, "test/plain.j2", {"word": "b"})
    assert first.value == second.value == "Say a." and other.value == "Say b."
    assert len(llm_server.chat_requests) == 2
    assert (cache.hits, cache.misses) == (1, 2)
    assert second.call.attempts[0].source == "cache" and second.call.cost_usd == 0.0
    # The cache file is reloaded by a new cache: still no request.
    reloaded = make_session({"cache": ResponseCache(tmp_path / "cache.jsonl")})
    await reloaded.generate(MODEL, "test/plain.j2", {"word": "b"})
    assert len(llm_server.chat_requests) == 2


async def test_recording_classmethod_writes_the_file(
    tmp_path: Path, make_session: Callable[..., LLMSession]
) -> None:
    template_session = make_session()
    session = LLMSession.recording(
        tmp_path / "r.jsonl", template_session.config, prompts=template_session.prompts
    )
    await session.generate(MODEL, "test/plain.j2", {"word": "a"})
    session.close()
    [line] = (tmp_path / "r.jsonl").read_text().splitlines()
    assert RecordedExchange.model_validate_json(line).response.text == "Say a."


async def test_scopes_with_identical_prompts_replay_their_own_answers(
    tmp_path: Path, llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    """Two episodes send the same prompt; the first request is answered last, so the
    recording holds the answers in network-completion order, not in request order."""
    recording = tmp_path / "batch.jsonl"
    llm_server.enqueue(Reply.text("answer-0", delay=0.3), Reply.text("answer-1"))
    batch = make_session({"recorder": Recorder(recording)})
    first, second = batch.scoped("episode-a"), batch.scoped("episode-b")
    slow = asyncio.create_task(first.generate(MODEL, "test/plain.j2", {"word": "hi"}))
    while not llm_server.chat_requests:  # episode-a's request is the first to arrive
        await asyncio.sleep(0.005)
    fast = await second.generate(MODEL, "test/plain.j2", {"word": "hi"})
    recorded = {"episode-a": (await slow).value, "episode-b": fast.value}
    batch.close()
    assert recorded == {"episode-a": "answer-0", "episode-b": "answer-1"}
    lines = [RecordedExchange.model_validate_json(x) for x in recording.open()]
    assert [x.scope for x in lines] == ["episode-b", "episode-a"]

    replay = make_session({"replayer": Replayer(recording)})
    replayed = {
        scope: (await replay.scoped(scope).generate(MODEL, "test/plain.j2", {"word": "hi"})).value
        for scope in ("episode-a", "episode-b")
    }
    assert replayed == recorded


async def test_replay_refuses_a_request_recorded_under_another_scope(
    tmp_path: Path, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "run.jsonl"
    with Recorder(recording) as recorder:
        session = make_session({"recorder": recorder})
        await session.scoped("episode-a").generate(MODEL, "test/plain.j2", {"word": "a"})
    replay = make_session({"replayer": Replayer(recording)})
    with pytest.raises(ReplayMissError, match="recorded under scope 'episode-a'"):
        await replay.scoped("episode-b").generate(MODEL, "test/plain.j2", {"word": "a"})
    with pytest.raises(ReplayMissError, match="in scope None"):
        await replay.generate(MODEL, "test/plain.j2", {"word": "a"})


def test_nested_scopes_are_paths(make_session: Callable[..., LLMSession]) -> None:
    batch = make_session()
    episode = batch.scoped("episode-a")
    assert episode.scoped("Alice").scope == "episode-a/Alice"
    assert batch.scoped("Alice").scope == "Alice"
    assert episode.scoped().scope == "episode-a"  # own records, same scope


async def test_a_recorder_refuses_to_overwrite_and_appends_when_asked(
    tmp_path: Path, make_session: Callable[..., LLMSession]
) -> None:
    recording = tmp_path / "batch.jsonl"
    with Recorder(recording) as recorder:
        await make_session({"recorder": recorder}).generate(MODEL, "test/plain.j2", {"word": "a"})
    with pytest.raises(FileExistsError, match=r"append=True"):
        Recorder(recording)
    with pytest.raises(FileExistsError, match=r"append=True"):
        LLMSession.recording(recording)
    assert len(recording.read_text().splitlines()) == 1  # the earlier recording is intact
    with Recorder(recording, append=True) as recorder:
        await make_session({"recorder": recorder}).generate(MODEL, "test/plain.j2", {"word": "b"})
    replay = make_session({"replayer": Replayer(recording)})
    for word in ("a", "b"):
        assert (
            await replay.generate(MODEL, "test/plain.j2", {"word": word})
        ).value == f"Say {word}."


def test_recordings_carry_a_version_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    from sotopia_are.llm.replay import RECORDING_VERSION

    request = LLMRequest(model="m", messages=(Message(role="user", content="hi"),))
    path = tmp_path / "calls.jsonl"
    with Recorder(path) as recorder:
        recorder.record(request, LLMResponse(text="hello"), scope="ep")
    line = json.loads(path.read_text())
    assert next(iter(line)) == "version" and line["version"] == RECORDING_VERSION
    assert Replayer(path).answer(request, "ep").text == "hello"
    newer = RecordedExchange.model_validate({**line, "version": RECORDING_VERSION + 1})
    path.write_text(newer.model_dump_json() + "\n")
    with pytest.raises(ValueError, match=r"newer sotopia_are.*Upgrade"):
        Replayer(path)
