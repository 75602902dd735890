"""Helpers of the hosting tests: a study of a spec with stand-in LLM seats, and an API
client of one seat (what a bot or a front end does over HTTP)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from sotopia_are.hosting import HostedStudy, hosting_app
from sotopia_are.llm import LLMSession
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeStore

ROOT = Path(__file__).resolve().parents[2]
GARDEN = ROOT / "examples" / "scenarios" / "garden_committee.json"
WEREWOLF = ROOT / "examples" / "games" / "werewolf.json"
BARGAINING = ROOT / "examples" / "games" / "bargaining.json"
MODEL = "openai/stand-in"


def load(path: Path, **changes: Any) -> EpisodeSpec:
    spec = EpisodeSpec.model_validate_json(path.read_text())
    return spec.replace(**changes) if changes else spec


def make_study(
    spec: EpisodeSpec,
    humans: list[str],
    session: LLMSession,
    *,
    store: EpisodeStore | None = None,
    **settings: Any,
) -> HostedStudy:
    settings.setdefault("tag", "hosted-test")
    study = HostedStudy.build(spec, humans, models=MODEL, llm=session, store=store, **settings)
    # A bot answers at once, turn after turn; a person's limit would slow it down.
    study.actions_per_second, study.action_burst = 1000.0, 1000
    return study


def client_of(study: HostedStudy) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=hosting_app(study)), base_url="http://hosting.test"
    )


def token_of(study: HostedStudy, seat: str, session: int = 1) -> str:
    return next(link.token for link in study.links if link.seat == seat and link.session == session)


_ids = itertools.count()


class SeatClient:
    """One seat's API client; every response body it got is kept in ``bodies``."""

    def __init__(self, http: httpx.AsyncClient, token: str) -> None:
        self.http = http
        self.token = token
        self.bodies: list[str] = []
        self.view: dict[str, Any] = {}

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def _keep(self, response: httpx.Response) -> httpx.Response:
        self.bodies.append(response.text)
        return response

    async def get(self) -> dict[str, Any]:
        response = self._keep(await self.http.get("/api/seat", headers=self.headers))
        assert response.status_code == 200, response.text
        self.view = response.json()
        return self.view

    async def changes(self, timeout: float = 5.0) -> dict[str, Any]:
        response = self._keep(
            await self.http.get(
                "/api/seat/changes",
                params={"since": self.view.get("version", -1), "timeout": timeout},
                headers=self.headers,
            )
        )
        assert response.status_code == 200, response.text
        self.view = response.json()
        return self.view

    async def act(self, action: dict[str, Any], client_id: str | None = None) -> httpx.Response:
        body = {"client_id": client_id or f"c{next(_ids)}", "action": action}
        return self._keep(
            await self.http.post(
                "/api/seat/actions",
                content=json.dumps(body),
                headers={**self.headers, "Content-Type": "application/json"},
            )
        )

    async def play(self, choose: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Play to the end: whenever it is this seat's turn, post ``choose(view)``."""
        await self.get()
        while self.view["state"] not in ("finished", "failed"):
            if self.view["your_turn"]:
                response = await self.act(choose(self.view))
                assert response.status_code == 200, response.text
            await self.changes()
        return self.view
