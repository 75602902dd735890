"""The participant API with several seats: what each seat is sent, idempotent and checked
submissions, timeouts recorded as timeouts, reconnecting, refused tokens, the rate limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hosting_support import GARDEN, SeatClient, client_of, load, make_study, token_of

import sotopia_are as sa
from sotopia_are.hosting import (
    HUMAN,
    TIMEOUT_NOTE,
    ExposedHostWarning,
    SessionState,
    ahost,
    is_timeout,
)
from sotopia_are.hosting.app import CONTENT_SECURITY_POLICY, DEFAULT_CONSENT
from sotopia_are.llm import LLMSession
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer

SECRET = "psst: the sunny half is yours if you vote with me"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def wait_for_turn(client: SeatClient, limit: int = 50) -> dict[str, Any]:
    await client.get()
    for _ in range(limit):
        if client.view["your_turn"] or client.view["state"] in ("finished", "failed"):
            return client.view
        await client.changes()
    raise AssertionError("the seat was never asked")


async def test_no_seat_is_sent_another_seats_goal_or_a_whisper_not_to_it(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    spec = load(GARDEN, max_turns=6)
    humans = ["Jo Ng", "Benedikt Müller-Roth"]
    study = make_study(spec, humans, make_session(), store=store, turn_timeout=30)
    goals = dict(zip(spec.agent_names, spec.agent_goals, strict=True))

    def whisperer(view: dict[str, Any]) -> dict[str, Any]:
        return {"action_type": "speak", "argument": SECRET, "to": ["Ines Okafor"]}

    def talker(view: dict[str, Any]) -> dict[str, Any]:
        return {"action_type": "speak", "argument": "The class needs a plot."}

    async with client_of(study) as http:
        jo = SeatClient(http, token_of(study, "Jo Ng"))
        ben = SeatClient(http, token_of(study, "Benedikt Müller-Roth"))
        await asyncio.gather(jo.play(whisperer), ben.play(talker))
    record = await study.sessions[0].finished()
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE
    assert SECRET in record.transcript("Ines Okafor")  # the whisper happened
    assert {record.models[name] for name in humans} == {HUMAN}
    # Nothing Benedikt was sent holds Jo's whisper, or the goal of anyone but him.
    for body in ben.bodies:
        assert SECRET not in body
        for name, goal in goals.items():
            if name != "Benedikt Müller-Roth":
                assert json.dumps(goal)[1:-1] not in body and goal not in body
    for body in jo.bodies:
        for name, goal in goals.items():
            if name != "Jo Ng":
                assert goal not in body
    # ... while each was sent its own goal, and Jo her own whisper.
    assert ben.view["goal"] == goals["Benedikt Müller-Roth"]
    assert jo.view["goal"] == goals["Jo Ng"]
    assert any(SECRET in line["text"] and line["private"] for line in jo.view["transcript"])
    # Every private line any seat got, it sent or was sent.
    for client, name in ((jo, "Jo Ng"), (ben, "Benedikt Müller-Roth")):
        for line in client.view["transcript"]:
            assert line["to"] is None or name in line["to"] or line["sender"] == name


async def test_a_repeated_submission_returns_the_first_answer_and_does_nothing(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    spec = load(GARDEN, max_turns=4)
    study = make_study(spec, ["Ines Okafor"], make_session(), store=store, turn_timeout=30)
    async with client_of(study) as http:
        ines = SeatClient(http, token_of(study, "Ines Okafor"))
        view = await wait_for_turn(ines)
        assert view["your_turn"]
        action = {"action_type": "speak", "argument": "Let us decide together."}
        first = await ines.act(action, client_id="same-id")
        again = await ines.act(action, client_id="same-id")
        assert first.status_code == again.status_code == 200
        assert again.json() == {**first.json(), "repeat": True}
        assert first.json()["repeat"] is False
        # A stale turn number is refused; an illegal action too, with the reason.
        stale = await ines.act({"action_type": "speak", "argument": "x"}, client_id="late")
        assert stale.status_code == 409
        view = await wait_for_turn(ines)
        bad = await ines.act({"action_type": "dance", "argument": "x"})
        assert bad.status_code == 422 and "action_type" in bad.json()["error"]
        unknown = await ines.act({"action_type": "speak", "argument": "hi", "to": ["Nobody"]})
        assert unknown.status_code == 422 and "Nobody" in unknown.json()["error"]
        # The repeat of the first is still the first answer, even now.
        third = await ines.act(action, client_id="same-id")
        assert third.json() == again.json()
        await ines.play(lambda v: {"action_type": "speak", "argument": "Agreed then."})
    record = await study.sessions[0].finished()
    assert record is not None
    said = [a.argument for name, a in record.actions() if name == "Ines Okafor"]
    assert said.count("Let us decide together.") == 1


async def test_a_turn_left_unanswered_is_recorded_as_a_timeout(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    spec = load(GARDEN, max_turns=4)
    study = make_study(spec, ["Jo Ng"], make_session(), store=store, turn_timeout=0.2)
    async with client_of(study) as http:
        jo = SeatClient(http, token_of(study, "Jo Ng"))
        await jo.get()  # arrives, then never acts
        while jo.view["state"] not in ("finished", "failed"):
            await jo.changes()
    record = store.load(study.sessions[0].episode_id)
    assert record.status is sa.EpisodeStatus.COMPLETE
    mine = [a for name, a in record.actions() if name == "Jo Ng"]
    assert mine and all(is_timeout(a) for a in mine)
    assert all(a.action_type == "none" and a.argument == TIMEOUT_NOTE for a in mine)
    assert jo.view["timeouts"] == len(mine) == len(study.sessions[0].seats["Jo Ng"].timeouts)
    # The others' actions are choices, not timeouts; and a timeout is in no transcript.
    assert not any(is_timeout(a) for name, a in record.actions() if name != "Jo Ng")
    assert TIMEOUT_NOTE not in record.transcript("Ines Okafor")


async def test_a_fresh_request_gives_the_same_state(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    spec = load(GARDEN, max_turns=4)
    study = make_study(spec, ["Ines Okafor"], make_session(), turn_timeout=30)
    async with client_of(study) as http:
        token = token_of(study, "Ines Okafor")
        view = await wait_for_turn(SeatClient(http, token))
        # A new client (a reload, another device) with the same token: the same state.
        again = await SeatClient(http, token).get()
        for shown in (view, again):
            shown.pop("time_left")
        assert again == view
        assert again["your_turn"] and again["turn"]["legal"]["actions"]
        await study.sessions[0].stop()


async def test_reading_the_consent_is_not_arriving(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    spec = load(GARDEN, max_turns=2)
    study = make_study(spec, ["Jo Ng"], make_session(), turn_timeout=45)
    own = make_study(spec, ["Jo Ng"], make_session(), consent="Read me first.")
    async with client_of(study) as http, client_of(own) as other:
        headers = bearer(token_of(study, "Jo Ng"))
        first = await http.get("/api/seat/consent", headers=headers)
        assert first.status_code == 200
        assert first.json() == {
            "seat": "Jo Ng",
            "consent": DEFAULT_CONSENT.format(seconds=45),
            "arrived": False,
        }
        session = study.sessions[0]
        assert session.state is SessionState.WAITING and not session.arrivals
        await SeatClient(http, token_of(study, "Jo Ng")).get()
        again = await http.get("/api/seat/consent", headers=headers)
        assert again.json()["arrived"] is True
        assert study.sessions[0].state is SessionState.RUNNING  # = session, not narrowed
        mine = await other.get("/api/seat/consent", headers=bearer(token_of(own, "Jo Ng")))
        assert mine.json()["consent"] == "Read me first."
        for refused in (
            await http.get("/api/seat/consent"),
            await http.get("/api/seat/consent", headers=bearer(token_of(own, "Jo Ng"))),
            await http.get("/api/seat/consent", headers=bearer(study.tokens.monitor)),
        ):
            assert refused.status_code == 404 and refused.json() == {"error": "not found"}
        await session.stop()


async def test_tokens_open_only_their_own_seat(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    spec = load(GARDEN, max_turns=2)
    study = make_study(spec, ["Jo Ng", "Ines Okafor"], make_session(), turn_timeout=30)
    async with client_of(study) as http:
        jo = await SeatClient(http, token_of(study, "Jo Ng")).get()
        assert jo["seat"] == "Jo Ng"
        refused = [
            await http.get("/api/seat"),
            await http.get(
                "/api/seat", headers={"Authorization": "Bearer " + secrets.token_urlsafe(32)}
            ),
            await http.get(
                "/api/seat", headers={"Authorization": f"Bearer {study.tokens.monitor}"}
            ),
            await http.get("/api/seat", headers={"Authorization": token_of(study, "Jo Ng")}),
            await http.get(
                "/api/monitor", headers={"Authorization": f"Bearer {token_of(study, 'Jo Ng')}"}
            ),
            await http.post(
                "/api/seat/actions",
                content="{}",
                headers={"Authorization": "Bearer nope", "Content-Type": "application/json"},
            ),
        ]
        for response in refused:
            assert response.status_code == 404
            assert response.json() == {"error": "not found"}
        monitor = await http.get(
            "/api/monitor", headers={"Authorization": f"Bearer {study.tokens.monitor}"}
        )
        assert monitor.status_code == 200
        row = monitor.json()["sessions"][0]
        assert [seat["player"] for seat in row["seats"]] == ["human", "openai/stand-in", "human"]
        assert "Jo Ng" in [seat["name"] for seat in row["seats"] if seat["arrived"]]
        # The monitor is sent no goal and no line of the conversation.
        for goal in spec.agent_goals:
            assert goal not in monitor.text
        # Every response carries the policy; a form post (no JSON) is refused.
        assert monitor.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        page = await http.get("/join")
        assert page.status_code == 200 and '<script src="static/seat.js"' in page.text
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        form = await http.post(
            "/api/seat/actions",
            content="client_id=x",
            headers={
                "Authorization": f"Bearer {token_of(study, 'Jo Ng')}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        assert form.status_code == 415
        for session in study.sessions:
            await session.stop()


async def test_a_seat_posting_too_fast_is_slowed_down(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    spec = load(GARDEN, max_turns=2)
    study = make_study(spec, ["Jo Ng", "Ines Okafor"], make_session(), turn_timeout=30)
    study.actions_per_second, study.action_burst = 0.5, 3
    async with client_of(study) as http:
        jo = SeatClient(http, token_of(study, "Jo Ng"))
        ines = SeatClient(http, token_of(study, "Ines Okafor"))
        codes = [(await jo.act({"action_type": "none"})).status_code for _ in range(5)]
        assert codes[:3] == [409, 409, 409]  # not its turn, but counted
        assert codes[3:] == [429, 429]
        limited = await jo.act({"action_type": "none"})
        assert int(limited.headers["retry-after"]) >= 1
        # Another seat has its own allowance.
        assert (await ines.act({"action_type": "none"})).status_code == 409


async def test_no_token_reaches_a_log(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Code run earlier in the session may have raised a logger's level or stopped it from
    # reaching the root: every logger's records down to DEBUG must be captured here.
    for logger in list(logging.root.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            monkeypatch.setattr(logger, "propagate", True)
            monkeypatch.setattr(logger, "disabled", False)
            monkeypatch.setattr(logger, "level", logging.NOTSET)
    monkeypatch.setattr(logging.root.manager, "disable", logging.NOTSET)
    caplog.set_level(logging.DEBUG)
    spec = load(GARDEN, max_turns=3)
    study = make_study(spec, ["Jo Ng"], make_session(), turn_timeout=30)
    async with client_of(study) as http:
        jo = SeatClient(http, token_of(study, "Jo Ng"))
        await jo.play(lambda v: {"action_type": "speak", "argument": "Herbs, please."})
        await http.get("/api/seat", headers={"Authorization": "Bearer wrong"})
    # The requests were logged (httpx logs each one), so a token in them would be seen.
    assert any(record.name == "httpx" for record in caplog.records)
    for token in study.tokens.all():
        assert token not in caplog.text


async def test_serving_on_another_address_than_loopback_warns(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    lines: list[str] = []
    spec = load(GARDEN, max_turns=4)
    settings: dict[str, Any] = {"models": "openai/x", "llm": make_session(), "preflight": False}
    with pytest.warns(ExposedHostWarning, match="other machines may reach the study"):
        serving = asyncio.create_task(
            ahost(spec, ["Jo Ng"], host="0.0.0.0", port=0, on_line=lines.append, **settings)
        )
        while len(lines) < 2 and not serving.done():
            await asyncio.sleep(0.05)
    assert lines[0].startswith("join Jo Ng: http://0.0.0.0:"), lines
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    # This machine only: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExposedHostWarning)
        lines.clear()
        quiet = asyncio.create_task(
            ahost(spec, ["Jo Ng"], host="127.0.0.1", port=0, on_line=lines.append, **settings)
        )
        while len(lines) < 2 and not quiet.done():
            await asyncio.sleep(0.05)
        assert not quiet.done(), quiet.exception()
        quiet.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await quiet
