"""The participant page in a real headless browser: Debian's chromium driven by Playwright
(never Playwright's own browser download), against a study served by :func:`ahost`
(uvicorn) on its own thread, the other seats played by the stand-in LLM.

Two people in two browser contexts (one phone-sized) play the garden committee to the
end, each whispering once: a whisper shows on its sender's and its recipient's pages,
marked, and reaches nothing else — not the third person's page nor any response their
browser received, not the stand-in model's prompts. One person plays Werewolf through the
game buttons and is never shown what the seat may not see. Three people open the one
waiting-room link with their Prolific ids and are seated in order of arrival; the ids
are kept only as pseudonyms.

Skipped when no chromium is installed (``apt-get install chromium``), except under CI,
where that is a failure; ``SOTOPIA_ARE_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hosting_support import BARGAINING, GARDEN, MODEL, WEREWOLF, load
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Response,
    ViewportSize,
    expect,
    sync_playwright,
)

import sotopia_are as sa
from sotopia_are.hosting import HUMAN, ahost
from sotopia_are.llm import LLMSession
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer

CHROMIUM = os.environ.get("SOTOPIA_ARE_CHROMIUM") or shutil.which("chromium")
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 900, "height": 1000}
CONSENT = "You will talk with two others about a garden plot. Your words are recorded."
JO_WHISPER = "Between you and me, Ines: I would share the plot with the school."
BENEDIKT_WHISPER = "Jo, keep this to yourself: the class only needs the sunny half."
# How long a page may take to show its next turn (the stand-in answers in milliseconds).
STEP_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for this module. While Playwright's driver runs, its event loop is the
    running one on this thread (asyncio.run could not start another here): the study is
    served, and rated, on threads of its own."""
    if CHROMIUM is None:
        message = "no chromium to test the participant page in: apt-get install chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$SOTOPIA_ARE_SCREENSHOTS`` if set (to keep them), else the
    test's tmp dir."""
    directory = Path(os.environ.get("SOTOPIA_ARE_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


class Served:
    """A study hosted by :func:`ahost` on its own thread (and event loop) until its
    sessions are over; ``links`` are its announced lines by seat (``monitor`` too, and
    ``waiting room``); ``announced`` is how many lines it prints (one per human seat and
    the monitor's, unless given)."""

    def __init__(
        self, spec: EpisodeSpec, humans: list[str], announced: int = 0, **settings: Any
    ) -> None:
        lines: queue.Queue[str] = queue.Queue()
        self.records: list[EpisodeRecord] = []
        self.error: BaseException | None = None

        def serve() -> None:
            try:
                self.records = asyncio.run(
                    ahost(spec, humans, port=0, preflight=False, on_line=lines.put, **settings)
                )
            except BaseException as error:  # reported by finish()
                self.error = error

        self.thread = threading.Thread(target=serve, name="hosting", daemon=True)
        self.thread.start()
        self.links: dict[str, str] = {}
        for _ in range(announced or len(humans) + 1):
            name, _, url = lines.get(timeout=20).partition(": ")
            self.links[name.removeprefix("join ")] = url

    def finish(self, timeout: float = 30.0) -> list[EpisodeRecord]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the study did not end"
        if self.error is not None:
            raise self.error
        return self.records


class Person:
    """One person's browser context and page; ``received`` keeps the body of every API
    response it got."""

    def __init__(self, browser: Browser, url: str, *, phone: bool = False) -> None:
        self.context: BrowserContext = browser.new_context(
            viewport=PHONE if phone else DESKTOP, is_mobile=phone, has_touch=phone
        )
        self.received: list[str] = []
        self.errors: list[str] = []
        self.context.on("response", self._keep)
        self.page: Page = self.context.new_page()
        self.page.on("console", self._note)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.answered = -1
        self.page.goto(url)

    def _keep(self, response: Response) -> None:
        # Read at once: a reload makes the browser drop the bodies of earlier responses.
        if "/api/" in response.url:
            self.received.append(response.text())

    def _note(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def agree(self, consent: str | None = None) -> None:
        """Read the consent screen (``consent`` its text, when known) and take the seat."""
        screen = self.page.locator("#consent")
        expect(screen).to_be_visible()
        if consent is not None:
            expect(screen.locator("#consent-text")).to_have_text(consent)
        self.page.get_by_role("button", name="I agree").click()
        expect(screen).to_be_hidden()
        expect(self.page.locator("#context")).to_be_visible()

    def state(self) -> str:
        """``turn`` when the page offers a turn not answered yet, ``done`` at the end,
        else ``wait``."""
        return str(
            self.page.evaluate(
                """(answered) => {
                  if (!document.getElementById("done").hidden) return "done";
                  const composer = document.getElementById("composer");
                  return !composer.hidden && Number(composer.dataset.version) > answered
                    && !document.querySelector("#composer button:disabled") ? "turn" : "wait";
                }""",
                self.answered,
            )
        )

    def take_turn(self, act: Callable[[Page], None]) -> None:
        """Do ``act`` on the page's composer and wait for the server to accept it."""
        self.answered = int(self.page.locator("#composer").get_attribute("data-version") or 0)
        self.assert_fits()
        with self.page.expect_response(lambda r: r.url.endswith("/api/seat/actions")) as sent:
            act(self.page)
        answer = sent.value
        assert answer.status == 200 and answer.json()["accepted"], answer.text()
        expect(self.page.locator("#problem")).to_have_text("")

    def assert_fits(self) -> None:
        """No horizontal scrolling, and every control of the composer within the width."""
        width = self.page.evaluate("window.innerWidth")
        assert self.page.evaluate("document.documentElement.scrollWidth") <= width
        for control in self.page.locator(
            "#composer button:visible, #composer textarea:visible"
        ).all():
            box = control.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width

    def close(self) -> None:
        self.context.close()
        assert self.errors == []


def play(people: list[Person], act: Callable[[Person, Page], None], seconds: float = 60) -> None:
    """Drive every page until each shows the end: whenever one offers a turn, ``act``."""
    clock = people[0].page
    waited = 0.0
    while True:
        states = [person.state() for person in people]
        if all(state == "done" for state in states):
            return
        for person, state in zip(people, states, strict=True):
            if state == "turn":
                person.take_turn(partial(act, person))
        clock.wait_for_timeout(50)
        waited += 0.05
        assert waited < seconds, f"the pages did not reach the end: {states}"


def compose_whisper(page: Page, to: str, words: str) -> None:
    page.get_by_label("Whisper", exact=True).check()
    expect(page.locator("#recipients")).to_be_visible()
    page.get_by_label(to, exact=True).check()
    page.locator("#argument").fill(words)


def say(page: Page, words: str) -> None:
    page.get_by_label("Say", exact=True).check()
    page.locator("#argument").fill(words)
    page.locator("#send").click()


def rate(record: EpisodeRecord, session: LLMSession, store: EpisodeStore) -> sa.EpisodeRecord:
    """``sa.rate`` on a thread of its own (this one's event loop is Playwright's)."""
    judge = sa.LLMJudge("openai/judge", session=session)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(sa.rate, record, judge, store=store).result(timeout=60)


def test_two_people_and_a_model_play_the_garden_committee_whispers_reach_only_their_audience(
    browser: Browser,
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
    screenshot_dir: Path,
) -> None:
    spec = load(GARDEN, max_turns=6)
    served = Served(
        spec,
        ["Benedikt Müller-Roth", "Jo Ng"],
        models=MODEL,
        llm=make_session(),
        store=store,
        tag="hosted-browser",
        turn_timeout=30,
        consent=CONSENT,
        completion_code="GARDEN-7",
    )
    jo = Person(browser, served.links["Jo Ng"])
    benedikt = Person(browser, served.links["Benedikt Müller-Roth"], phone=True)
    # The token left the address bar at once.
    assert "#t=" not in jo.page.url and "#t=" not in benedikt.page.url
    jo.agree(CONSENT)
    expect(jo.page.locator("#status")).to_have_text("Waiting for the others to arrive…")
    benedikt.agree(CONSENT)
    expect(jo.page.locator("#goal")).to_contain_text("herbs")
    expect(jo.page.locator("#goal")).not_to_contain_text("school")  # Benedikt's goal
    # The monitor lists the session with its people.
    monitor = jo.context.new_page()
    monitor.goto(served.links["monitor"])
    row = monitor.locator("#sessions tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Jo Ng (human) here")
    expect(row).to_contain_text(f"Ines Okafor ({MODEL})")
    monitor.close()

    turns = {"Jo Ng": 0, "Benedikt Müller-Roth": 0}

    def act(person: Person, page: Page) -> None:
        seat = "Jo Ng" if person is jo else "Benedikt Müller-Roth"
        turns[seat] += 1
        expect(page.locator("#turnbar")).to_have_class("yours")
        expect(page.locator("#countdown")).to_contain_text("left")
        if person is jo and turns[seat] == 2:
            # A reload returns her to the same turn, without the consent screen again.
            page.reload()
            expect(page.locator("#composer")).to_be_visible()
            expect(page.locator("#consent")).to_be_hidden()
            expect(page.locator("#transcript li.private")).to_have_count(2)
            # The docs' picture: both whispers on Jo's page, a whisper being composed.
            compose_whisper(page, "Ines Okafor", "Shade for the herbs, sun for the class?")
            page.screenshot(path=screenshot_dir / "hosting-participant.png", full_page=True)
        if turns[seat] > 1:
            say(page, f"{seat} again: let us decide today.")
        elif person is jo:
            # Benedikt's whisper reached Jo, marked as private to her.
            line = page.locator("#transcript li.private", has_text=BENEDIKT_WHISPER)
            expect(line.locator(".marker")).to_have_text("private: Benedikt Müller-Roth → you")
            compose_whisper(page, "Ines Okafor", JO_WHISPER)
            page.locator("#send").click()
        else:
            compose_whisper(page, "Jo Ng", BENEDIKT_WHISPER)
            page.locator("#send").scroll_into_view_if_needed()
            page.screenshot(path=screenshot_dir / "hosting-participant-phone.png")
            page.locator("#send").click()

    play([jo, benedikt], act)
    records = served.finish()
    assert turns == {"Jo Ng": 2, "Benedikt Müller-Roth": 2}

    # Each whisper is on its sender's and recipient's pages, marked; never on another's.
    sent = jo.page.locator("#transcript li.private", has_text=JO_WHISPER)
    expect(sent.locator(".marker")).to_have_text("private: you → Ines Okafor")
    expect(jo.page.locator("#transcript li.private", has_text=BENEDIKT_WHISPER)).to_have_count(1)
    expect(
        benedikt.page.locator("#transcript li.private", has_text=BENEDIKT_WHISPER)
    ).to_have_count(1)
    expect(benedikt.page.locator("main")).not_to_contain_text(JO_WHISPER)
    expect(jo.page.locator("#completion")).to_have_text("Your completion code: GARDEN-7")
    # Nothing Benedikt's browser received holds Jo's whisper (nor her goal); the
    # stand-in model playing Ines was never sent Benedikt's whisper to Jo.
    benedikt_bodies = benedikt.received
    assert any("GARDEN-7" in body for body in benedikt_bodies)
    assert not any(JO_WHISPER in body or "herbs" in body for body in benedikt_bodies)
    assert any(JO_WHISPER in body for body in jo.received)
    prompts = [str(request.messages) for request in stand_in.chat_requests]
    assert prompts and not any(BENEDIKT_WHISPER in prompt for prompt in prompts)
    jo.close()
    benedikt.close()

    (record,) = records
    assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
    assert record.models == {"Ines Okafor": MODEL, "Benedikt Müller-Roth": HUMAN, "Jo Ng": HUMAN}
    assert store.load(record.episode_id) == record
    rated = rate(record, make_session(), store)
    assert not rated.failed_or_unrated
    assert set(rated.scores) == set(spec.agent_names)


def test_a_person_plays_werewolf_through_the_buttons_on_a_phone(
    browser: Browser,
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
    screenshot_dir: Path,
) -> None:
    person_seat = "Ada Brennan"
    spec = load(WEREWOLF)
    served = Served(
        spec, [person_seat], models=MODEL, llm=make_session(), store=store, turn_timeout=30
    )
    ada = Person(browser, served.links[person_seat], phone=True)
    ada.agree()
    expect(ada.page.locator("#consent-text")).to_be_hidden()
    seen: list[str] = []
    kinds: list[str] = []

    def act(person: Person, page: Page) -> None:
        seen.append(page.locator("main").inner_text())
        moves = page.locator("#game-controls fieldset.move")
        expect(moves.first).to_be_visible()
        expect(page.locator("#action-form")).to_be_hidden()
        kind = moves.first.get_attribute("data-kind")
        kinds.append(str(kind))
        first = moves.first
        if kind == "speak":
            first.locator("textarea").fill("I trust nobody tonight.")
            first.get_by_role("button").click()
        elif kind == "target":
            targets = first.locator("button.target")
            if first.get_attribute("data-move") == "vote":
                assert person_seat not in targets.all_inner_texts()
            if "target" not in kinds[:-1]:
                page.screenshot(path=screenshot_dir / "hosting-werewolf-phone.png")
            targets.first.click()
        else:
            first.get_by_role("button").first.click()

    play([ada], act, seconds=90)
    (record,) = served.finish()
    bodies = ada.received
    ada.close()
    assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
    assert record.models[person_seat] == HUMAN
    assert "speak" in kinds and "target" in kinds
    shown = [entry.render() for entry in record.views.entries if entry.visible_to(person_seat)]
    # The stand-in repeats a few stock lines, so a line said in the night chat may also be
    # said by day: only what she could not have seen in any form is looked for.
    hidden = [
        text
        for entry in record.views.entries
        if not entry.visible_to(person_seat) and not entry.is_nothing
        for text in [entry.render()]
        if not any(text in line for line in shown)
    ]
    assert hidden  # the others did things out of her sight (roles told, night moves)
    for text in hidden:
        assert not any(text in page_text for page_text in seen), text
        assert not any(text in body for body in bodies), text
    others = [name for name in spec.agent_names if name != person_seat]
    for page_text in seen:
        assert f"{person_seat}, your role is" in page_text
        assert not any(f"{name}, your role is" in page_text for name in others)


def test_an_offer_is_bounded_on_the_page_and_a_bargain_is_played_to_the_end(
    browser: Browser,
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    seat = "Lena Fischer"
    spec = load(BARGAINING)
    served = Served(spec, [seat], models=MODEL, llm=make_session(), store=store, turn_timeout=30)
    lena = Person(browser, served.links[seat], phone=True)
    lena.agree()
    sent: list[str] = []
    lena.page.on(
        "request", lambda request: sent.append(request.url) if "/actions" in request.url else None
    )

    def act(person: Person, page: Page) -> None:
        offer = page.locator('fieldset.move[data-move="offer"]')
        amount = offer.get_by_role("spinbutton")
        expect(amount).to_have_attribute("min", "0")
        expect(amount).to_have_attribute("max", "100")
        if not sent:
            # Out of bounds: the page says so and sends nothing.
            amount.fill("150")
            offer.get_by_role("button", name="offer").click()
            expect(page.locator("#problem")).to_have_text("Offer a whole number from 0 to 100.")
            assert sent == []
            amount.fill("60")
            offer.get_by_role("button", name="offer").click()
        else:
            page.locator('fieldset.move[data-move="say"] textarea').fill("Sixty is fair.")
            page.locator('fieldset.move[data-move="say"] button').click()

    play([lena], act)
    (record,) = served.finish()
    lena.close()
    assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
    moves = [action for name, action in record.actions() if name == seat]
    assert len(moves) == len(sent) >= 2
    assert moves[0].argument == "offer 60"  # the log's form of the move


def stored_text(store: EpisodeStore) -> str:
    """Everything the store holds (every key and value of every Redis type), as text."""
    client: Any = store.client
    readers: dict[str, Callable[[Any], Any]] = {
        "string": client.get,
        "hash": client.hgetall,
        "list": lambda key: client.lrange(key, 0, -1),
        "set": client.smembers,
        "zset": lambda key: client.zrange(key, 0, -1),
        "stream": client.xrange,
    }
    parts: list[str] = []
    for key in client.scan_iter():
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        parts.append(f"{key!r} {readers[kind](key)!r}")
    return "\n".join(parts)


def test_three_people_come_through_the_waiting_room_in_order_their_ids_kept_as_pseudonyms(
    browser: Browser,
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    spec = load(GARDEN, max_turns=4)
    served = Served(
        spec,
        ["Jo Ng", "Ines Okafor"],
        announced=2,  # the waiting room and the monitor
        models=MODEL,
        llm=make_session(),
        store=store,
        tag="hosted-room",
        sessions=2,
        by_arrival=True,
        fill_after=8,  # session 2 gets one person: its other seat goes to the model
        turn_timeout=30,
    )
    room = served.links["waiting room"]
    page_url, _, fragment = room.partition("#")
    assert fragment.startswith("e=")
    pids = ["60a3f1c2b7e94d0012ab34cd", "5f9e8d7c6b5a4f3e2d1c0b9a", "61b2c3d4e5f60718293a4b5c"]
    people = []
    for number, pid in enumerate(pids):
        # Prolific's form of the link: its own parameters around the participant id.
        person = Person(
            browser,
            f"{page_url}?PROLIFIC_PID={pid}&STUDY_ID=garden&SESSION_ID=s{number}#{fragment}",
            phone=number == 2,
        )
        assert "#e=" not in person.page.url  # the room's token left the address bar
        expect(person.page.locator("#consent-seat")).to_have_text(
            "You will be given a seat when you agree."
        )
        person.agree()  # arrives: one after the other, in this order
        people.append(person)
    seats = [p.page.locator("#seat").inner_text() for p in people]
    assert seats == ["You are Jo Ng", "You are Ines Okafor", "You are Jo Ng"]
    # A reload goes on with the seat given (the room's link is not asked again).
    people[0].page.reload()
    expect(people[0].page.locator("#seat")).to_have_text("You are Jo Ng")
    expect(people[0].page.locator("#consent")).to_be_hidden()

    def act(person: Person, page: Page) -> None:
        say(page, "The herbs and the class could share the plot.")

    play(people, act, seconds=90)
    records = served.finish()
    for person in people:
        expect(person.page.locator("#done")).to_be_visible()
        person.close()

    assert len(records) == 2
    hosting = {
        meta["session"]: meta
        for record in records
        for meta in [store.get_episode(record.episode_id).metadata["hosting"]]
        if isinstance(meta, dict)
    }
    first, second = hosting[1], hosting[2]
    assert isinstance(first["humans"], dict) and isinstance(second["humans"], dict)
    assert set(first["humans"]) == {"Jo Ng", "Ines Okafor"} and first["filled"] == []
    assert set(second["humans"]) == {"Jo Ng"} and second["filled"] == ["Ines Okafor"]
    pseudonyms = [
        arrival["participant"]  # type: ignore[index,call-overload]
        for arrival in (
            first["humans"]["Jo Ng"],
            first["humans"]["Ines Okafor"],
            second["humans"]["Jo Ng"],
        )
    ]
    assert len(set(pseudonyms)) == 3
    assert all(re.fullmatch("[0-9a-f]{16}", str(p)) for p in pseudonyms)
    for record in records:
        assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
        assert store.load(record.episode_id) == record
    # The raw ids are nowhere: not in the store, not in any log line or output.
    everything = stored_text(store)
    assert all(str(p) in everything for p in pseudonyms)  # the scan does see the metadata
    logged = "\n".join(r.getMessage() for r in caplog.records)
    output = capfd.readouterr()
    for pid in pids:
        assert pid not in everything
        assert pid not in logged and pid not in output.out and pid not in output.err
        for record in records:
            assert pid not in record.model_dump_json()
