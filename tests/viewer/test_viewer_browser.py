"""The viewer in a real headless browser: Debian's chromium driven by Playwright (never
Playwright's own browser download). It opens the served list, clicks through to an
episode, sees the transcript and the private marker, and saves screenshots; the static
file's filters and links work with no server at all; a stored werewolf game shows its
outcome, roles and phases, and a villager's view without the night.

Skipped when no chromium is installed (``apt-get install chromium``), except under CI,
where that is a failure; ``SOTOPIA_ARE_CHROMIUM`` names another binary.
"""

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright
from viewer_support import GARDEN_WHISPER, SPEECH, TAG, Games, Seeded

from sotopia_are.viewer import ViewerServer, static_page

CHROMIUM = os.environ.get("SOTOPIA_ARE_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="module")
def browser(seeded: Seeded, played_games: Games) -> Iterator[Browser]:
    """Chromium, launched after the stores are seeded and stopped with this module:
    while Playwright's driver runs, its event loop is the running one on this thread,
    where asyncio.run (seeding, other modules' episodes) could not start another."""
    if CHROMIUM is None:
        message = "no chromium to test the viewer in: apt-get install chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page that fails the test on any error the page logs (a blocked script, a
    resource it tried to load)."""
    opened = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []

    def note(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    opened.on("console", note)
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    assert errors == []


@pytest.fixture
def served(seeded: Seeded) -> Iterator[str]:
    with seeded.store() as store, ViewerServer(store, port=0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.url
        server.shutdown()
        thread.join()


def test_click_from_the_list_to_an_episode_and_see_the_whisper_marked(
    page: Page, served: str, seeded: Seeded, screenshot_dir: Path
) -> None:
    page.goto(served)
    expect(page.locator("tr.episode-row")).to_have_count(6)
    page.screenshot(path=screenshot_dir / "viewer-list.png", full_page=True)
    page.get_by_role("link", name=seeded.garden).click()
    page.wait_for_url(f"**/episode/{seeded.garden}")
    transcript = page.locator(".transcript-all")
    expect(transcript).to_be_visible()
    expect(transcript).to_contain_text("The children have been waiting since spring")
    whisper = transcript.locator("li.private")
    expect(whisper).to_have_count(1)
    expect(whisper).to_contain_text(GARDEN_WHISPER)
    expect(whisper.locator(".private-marker")).to_be_visible()
    expect(whisper.locator(".private-marker")).to_have_text("private to Ines Okafor")
    page.screenshot(path=screenshot_dir / "viewer-episode.png")
    # The outsider's view, opened, shows the public talk and not the whisper.
    outsider = page.locator('details.agent-view[data-agent="Benedikt Müller-Roth"]')
    outsider.locator("summary").click()
    expect(outsider).to_contain_text("yoghurt pots")
    expect(outsider).not_to_contain_text(GARDEN_WHISPER)
    expect(page.locator("section.verdict")).to_have_count(2)
    expect(page.locator("td.reasoning").first).to_be_visible()
    page.screenshot(path=screenshot_dir / "viewer-episode-full.png", full_page=True)


def test_markup_in_an_episode_shows_as_text_and_never_runs(
    page: Page, served: str, seeded: Seeded
) -> None:
    page.goto(f"{served}episode/{seeded.played[0]}")
    expect(page.locator(".transcript-all li").first).to_contain_text(SPEECH)
    assert page.title() != "pwned"
    expect(page.locator(".transcript-all b, .transcript-all script")).to_have_count(0)
    expect(page.locator("td.reasoning i")).to_have_count(0)


def test_a_batch_page_draws_its_score_distributions(
    page: Page, served: str, screenshot_dir: Path
) -> None:
    page.goto(served)
    page.locator("#batches").get_by_role("link", name=TAG).click()
    expect(page.locator("figure svg")).to_have_count(8)  # 7 dimensions, overall
    assert page.locator("svg rect.bar").first.bounding_box() is not None
    page.screenshot(path=screenshot_dir / "viewer-batch.png", full_page=True)


def test_the_static_file_filters_and_links_without_a_server(
    page: Page, seeded: Seeded, tmp_path: Path
) -> None:
    path = tmp_path / "viewer.html"
    with seeded.store() as store:
        path.write_text(static_page(store), encoding="utf-8")
    page.goto(path.as_uri())
    rows = page.locator("tr.episode-row")
    expect(rows).to_have_count(6)
    page.select_option("select[name=status]", "failed")
    expect(rows.locator("visible=true")).to_have_count(1)
    expect(page.locator("#shown")).to_have_text("1")
    page.select_option("select[name=status]", "")
    page.fill("input[name=min_score]", "0")
    visible = rows.locator("visible=true")
    expect(visible).to_have_count(1)  # only played-2 has an agent at 0 or above
    expect(visible).to_contain_text(seeded.played[2])
    page.fill("input[name=min_score]", "")
    page.get_by_role("link", name=seeded.garden).click()
    section = page.locator(f"#episode-{seeded.garden}")
    expect(section).to_be_visible()
    expect(page.locator("#index")).to_be_hidden()
    marker = section.locator(".transcript-all .private-marker")
    expect(marker).to_have_text("private to Ines Okafor")
    page.go_back()
    expect(page.locator("#index")).to_be_visible()


def test_a_werewolf_game_shows_its_outcome_phases_and_a_villagers_view(
    page: Page, played_games: Games, screenshot_dir: Path
) -> None:
    with played_games.store() as store, ViewerServer(store, port=0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            page.goto(f"{server.url}episode/{played_games.werewolf}")
            roles = page.locator("table.roles tbody tr")
            expect(roles).to_have_count(7)
            expect(page.locator("table.roles")).to_be_visible()
            expect(page.locator("p.outcome")).to_contain_text("werewolves won")
            phases = page.locator(".transcript-all div.phase")
            expect(phases.first.locator("h3")).to_have_text("the start: roles dealt")
            vote = page.locator('.transcript-all div.phase[data-phase="day-vote"]').first
            expect(vote.locator("table.votes tbody tr")).to_have_count(7)
            expect(vote.locator("p.tally")).to_be_visible()
            # From the game's summary on (docs/img/viewer-game.png is this screenshot).
            page.set_viewport_size({"width": 1280, "height": 1500})
            page.goto(f"{server.url}episode/{played_games.werewolf}#game")
            page.screenshot(path=screenshot_dir / "viewer-game.png")
            villager = page.locator('details.agent-view[data-agent="Ada Brennan"]')
            villager.locator("summary").click()
            # Of the night chat it hears only that night falls.
            night = villager.locator('div.phase[data-phase="night-chat"][data-cycle="1"] li')
            expect(night).to_have_count(1)
            expect(night).to_contain_text("Night falls")
            expect(villager).not_to_contain_text("is a werewolf.")
            expect(villager).to_contain_text("Ada Brennan, your role is villager")
        finally:
            server.shutdown()
            thread.join()
