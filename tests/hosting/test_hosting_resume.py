"""Restart-resume: a session stopped mid-play (the app gone, or the `sotopia-are host`
process killed) is taken up by a new server from the store — the person's old link opens
the same seat in the same state, the session goes on to its end, and the final record
holds every earlier event and model call unchanged, once, exactly as one uninterrupted
play does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from hosting_support import GARDEN, SeatClient, client_of, load, make_study, token_of

import sotopia_are as sa
from sotopia_are.hosting import HUMAN, HostedStudy
from sotopia_are.hosting.study import StudyMismatchError
from sotopia_are.storage import EpisodeStore, connect
from sotopia_are.storage.episode_layout import usage_summary
from sotopia_are.storage.events import encode_event
from sotopia_are.testing import LocalLLMServer


def said(view: dict[str, Any]) -> dict[str, Any]:
    return {"action_type": "speak", "argument": f"Herbs, turn {view['turn']['number']}."}


async def play_some(client: SeatClient, actions: int | None) -> dict[str, Any]:
    """Act ``actions`` times (None: to the end), then return the view."""
    await client.get()
    done = 0
    while client.view["state"] not in ("finished", "failed"):
        if client.view["your_turn"]:
            if actions is not None and done == actions:
                return client.view
            response = await client.act(said(client.view))
            assert response.status_code == 200, response.text
            done += 1
        await client.changes()
    return client.view


def events_of(record: sa.EpisodeRecord) -> list[str]:
    return [encode_event(event) for event in record.events]


def prompts_of(calls: Any) -> list[str]:
    """Each call's prompt (the transcript so far: one per model turn, never repeated)."""
    return [json.dumps(call.model_dump(mode="json")["messages"]) for call in calls]


async def test_a_session_resumes_from_the_store_as_if_never_stopped(
    stand_in: LocalLLMServer, make_session: Any, store: EpisodeStore
) -> None:
    spec = load(GARDEN, max_turns=9)
    # The uninterrupted play, for the events the same answers give.
    whole = make_study(spec, ["Jo Ng"], make_session(), store=store)
    async with client_of(whole) as http:
        await play_some(SeatClient(http, token_of(whole, "Jo Ng")), None)
    reference = await whole.sessions[0].finished()
    assert reference is not None and reference.status is sa.EpisodeStatus.COMPLETE

    study = make_study(spec, ["Jo Ng"], make_session(), store=store, tag="resumed")
    token = token_of(study, "Jo Ng")
    async with client_of(study) as http:
        before = await play_some(SeatClient(http, token), 2)
    episode_id = study.sessions[0].episode_id
    await study.sessions[0].stop()  # the app is gone; the episode is left incomplete
    stored_before = store.read_events(episode_id)
    assert store.get_episode(episode_id).status is sa.EpisodeStatus.INCOMPLETE
    assert stored_before
    # The calls were stored as they were made, not when the episode ended.
    calls_before = store.read_calls(episode_id)
    assert calls_before and calls_before == [
        call.model_dump(mode="json") for call in study.sessions[0].calls
    ]

    again = HostedStudy.build(
        spec, ["Jo Ng"], models="openai/stand-in", llm=make_session(), store=store, tag="resumed"
    )
    again.actions_per_second, again.action_burst = 1000.0, 1000
    assert again.resumed == [1] and again.sessions[0].episode_id == episode_id
    assert again.links == []  # the old links stay: the store has only their digests
    again.start_resumed()
    async with client_of(again) as http:
        jo = SeatClient(http, token)  # the old link
        view = await jo.get()
        for _ in range(20):  # the replay runs on the loop; wait for Jo's turn again
            if view["your_turn"]:
                break
            view = await jo.changes()
        assert view["transcript"] == before["transcript"]
        assert view["turn"]["number"] == before["turn"]["number"]
        final = await play_some(jo, None)
    assert final["state"] == "finished"
    record = await again.sessions[0].finished()
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE
    stored = store.load(episode_id)
    assert events_of(stored) == events_of(record)
    assert events_of(stored) == events_of(reference)  # as one uninterrupted play
    assert events_of(stored)[: len(stored_before)] == [encode_event(e) for e in stored_before]
    assert len({event.event_id for event in stored.events}) == len(stored.events)
    assert stored == record
    # Every call exactly once: those made before the restart, unchanged, then the live
    # ones — the same prompts, in the same order, as the uninterrupted play made.
    assert [c.model_dump(mode="json") for c in stored.calls[: len(calls_before)]] == calls_before
    assert prompts_of(stored.calls) == prompts_of(reference.calls)
    assert len(set(prompts_of(stored.calls))) == len(stored.calls)
    # The usage stored with the episode is that of every call, not only the live ones.
    assert store.get_episode(episode_id).usage == usage_summary(stored.usage)
    assert stored.usage.prompt_tokens == sum(c.prompt_tokens or 0 for c in stored.calls)
    assert stored.models["Jo Ng"] == HUMAN
    log = store.get_episode(episode_id)
    assert log.attempt == 2
    resumed = log.metadata["hosting"]["resumed"]  # type: ignore[index,call-overload]
    assert resumed[0]["events_replayed"] == len(stored_before)


async def test_a_finished_study_is_not_resumed_and_a_different_one_is_refused(
    stand_in: LocalLLMServer, make_session: Any, store: EpisodeStore
) -> None:
    spec = load(GARDEN, max_turns=9)
    study = make_study(spec, ["Jo Ng"], make_session(), store=store, tag="garden")
    token = token_of(study, "Jo Ng")
    async with client_of(study) as http:
        view = await play_some(SeatClient(http, token), 1)
    assert view["state"] == "running"
    await study.sessions[0].stop()
    with pytest.raises(StudyMismatchError, match="another --tag"):
        make_study(spec, ["Benedikt Müller-Roth"], make_session(), store=store, tag="garden")
    with pytest.raises(StudyMismatchError):
        make_study(spec.replace(max_turns=5), ["Jo Ng"], make_session(), store=store, tag="garden")
    with pytest.raises(StudyMismatchError):
        make_study(spec, ["Jo Ng"], make_session(), store=store, tag="garden", sessions=2)
    # Resumed and played to the end, the study is over: the same tag then starts afresh.
    again = make_study(spec, ["Jo Ng"], make_session(), store=store, tag="garden")
    assert again.resumed == [1]
    again.start_resumed()
    async with client_of(again) as http:
        assert (await play_some(SeatClient(http, token), None))["state"] == "finished"
    fresh = make_study(spec, ["Jo Ng"], make_session(), store=store, tag="garden")
    assert fresh.resumed == [] and [link.seat for link in fresh.links] == ["Jo Ng", None]
    assert fresh.sessions[0].episode_id != again.sessions[0].episode_id
    assert fresh.locate(token) is None  # the old study's links open nothing now


def _host(stand_in: LocalLLMServer, url: str, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "REDIS_OM_URL": url}
    command = [
        sys.executable, "-m", "sotopia_are", "host", str(GARDEN),
        "--human", "Jo Ng", "--model", "openai/stand-in", "--api-base", stand_in.url,
        "--api-key", "sk-test", "--port", str(port), "--turn-timeout", "30",
        "--tag", "killed", "--max-turns", "15",
    ]  # fmt: skip
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _act(http: httpx.Client, token: str, until_actions: int | None, start: int = 0) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    view = http.get("/api/seat", headers=headers).json()
    done = start
    deadline = time.monotonic() + 120
    while view["state"] not in ("finished", "failed") and time.monotonic() < deadline:
        if view["your_turn"]:
            if until_actions is not None and done == until_actions:
                return done
            done += 1
            answer = http.post(
                "/api/seat/actions",
                json={
                    "client_id": f"jo-{done}",
                    "action": {"action_type": "speak", "argument": f"Herbs, take {done}."},
                },
                headers=headers,
            )
            assert answer.status_code == 200, answer.text
        view = http.get(
            "/api/seat/changes", params={"since": view["version"]}, headers=headers
        ).json()
    assert view["state"] == "finished", view
    return done


def test_a_killed_host_process_is_resumed_by_the_next_one(
    stand_in: LocalLLMServer, storage_data_dir: str
) -> None:
    with connect() as store:
        url = store.url
        assert url is not None
        first = _host(stand_in, url, 0)
        try:
            assert first.stdout is not None
            join = first.stdout.readline().strip()
            assert join.startswith("join Jo Ng: http://127.0.0.1:"), join
            page, _, token = join.removeprefix("join Jo Ng: ").partition("#t=")
            base = page.removesuffix("/join")
            with httpx.Client(base_url=base, timeout=30) as http:
                acted = _act(http, token, 2)
                assert acted == 2
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        (episode,) = store.list_episodes(tag="killed")
        assert episode.status is sa.EpisodeStatus.RUNNING  # killed: nobody marked it
        before = [encode_event(e) for e in store.read_events(episode.pk)]
        calls_before = store.read_calls(episode.pk)
        assert calls_before  # streamed as made: a kill loses none
        port = int(base.rsplit(":", 1)[1])
        second = _host(stand_in, url, port)
        try:
            assert second.stdout is not None
            lines = [second.stdout.readline().strip() for _ in range(2)]
            assert lines[0].startswith("resumed session 1: "), lines
            assert "the links given before" in lines[1], lines
            with httpx.Client(base_url=base, timeout=30) as http:
                _act(http, token, None, start=acted)
            second.wait(timeout=60)
            output = second.stdout.read()
            assert second.returncode == 0, output
            assert f"stored {episode.pk}: complete" in output
        finally:
            if second.poll() is None:
                second.kill()
            second.wait(timeout=10)
        record = store.load(episode.pk)
        after = [encode_event(e) for e in record.events]
        assert after[: len(before)] == before
        assert len(set(after)) == len(after)
        jo = [a.argument for name, a in record.actions() if name == "Jo Ng" and a.argument]
        assert jo[:3] == ["Herbs, take 1.", "Herbs, take 2.", "Herbs, take 3."]
        assert len(jo) == len(set(jo))
        calls = [call.model_dump(mode="json") for call in record.calls]
        assert calls[: len(calls_before)] == calls_before
        assert len(set(prompts_of(record.calls))) == len(calls)
        # One call per model turn: the models' answers in the record, none lost or twice.
        models = [name for name, _ in record.actions() if name != "Jo Ng"]
        assert len(calls) == len(models)
