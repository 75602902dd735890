"""A whole hosted episode: a person (an API client) on one seat of the garden committee,
stand-in LLM agents on the others, played to the end, stored and rated like any episode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hosting_support import GARDEN, SeatClient, client_of, load, make_study, token_of

import sotopia_are as sa
from sotopia_are.hosting import HUMAN, SessionState
from sotopia_are.llm import LLMSession
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer

WHISPER = "I would share the plot with the school, if you back me."


def jo(view: dict[str, Any]) -> dict[str, Any]:
    """Jo whispers to the chair on the first turn, then speaks in public."""
    legal = view["turn"]["legal"]
    assert "speak" in legal["actions"] and "Ines Okafor" in legal["recipients"]
    if view["turn"]["number"] < 3:
        return {"action_type": "speak", "argument": WHISPER, "to": ["Ines Okafor"]}
    return {"action_type": "speak", "argument": f"Turn {view['turn']['number']}: herbs need sun."}


async def test_a_person_plays_the_garden_committee_to_the_end_stored_and_rated(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    spec = load(GARDEN, max_turns=6)
    study = make_study(spec, ["Jo Ng"], make_session(), store=store, turn_timeout=30)
    session = study.sessions[0]
    async with client_of(study) as http:
        person = SeatClient(http, token_of(study, "Jo Ng"))
        last = await person.play(jo)
    record = await session.finished()
    assert session.state is SessionState.FINISHED
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE, record
    assert last["state"] == "finished" and last["outcome"]["status"] == "complete"
    stored = store.load(session.episode_id)
    assert stored == record
    assert stored.models["Jo Ng"] == HUMAN
    assert stored.models["Ines Okafor"] == "openai/stand-in"
    jo_actions = [action for name, action in stored.actions() if name == "Jo Ng"]
    assert any(a.to == ["Ines Okafor"] and a.argument == WHISPER for a in jo_actions)
    # The whisper reached its recipient's view (and the person's own page showed it).
    assert WHISPER in stored.transcript("Ines Okafor")
    assert any(
        line["text"].endswith(WHISPER) or WHISPER in line["text"] for line in last["transcript"]
    )
    judge = sa.LLMJudge("openai/judge", session=make_session())
    rated = await sa.arate(stored, judge, store=store)
    assert not rated.failed_or_unrated
    assert set(rated.scores) == set(spec.agent_names)
    assert store.load(session.episode_id).scores == rated.scores
