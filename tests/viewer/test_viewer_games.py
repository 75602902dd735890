"""A stored game in the viewer: its phases as sections of the transcript, every vote and
tally, the eliminations, the roles and payoffs once it is over (and none before), and each
player's view without what that player could not see — checked on the HTML the server
returns, and as a law over random games."""

import asyncio
import re
import threading
import urllib.parse
import urllib.request
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markupsafe import escape
from viewer_support import (
    DEAL,
    MARKUP,
    VOTE_REASON,
    Games,
    agent_sections,
    example,
)

from sotopia_are import games
from sotopia_are.record import EpisodeRecord, record_of_result
from sotopia_are.social import ENVIRONMENT_SENDER, ConversationEntry, EpisodeStatus
from sotopia_are.storage import EpisodeStore
from sotopia_are.viewer import ViewerServer, render_episode, render_static

ROW = re.compile(
    r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td[^>]*>(.*?)</td><td>(.*?)</td></tr>"
)


def served(store: EpisodeStore, episode_id: str) -> str:
    """The page the viewer's server returns for ``episode_id``."""
    with ViewerServer(store, port=0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"{server.url}episode/{urllib.parse.quote(episode_id, safe='')}"
            with urllib.request.urlopen(url, timeout=30) as response:
                assert response.status == 200
                return str(response.read().decode("utf-8"))
        finally:
            server.shutdown()
            thread.join()


def load(played: Games, episode_id: str) -> EpisodeRecord:
    with played.store() as store:
        return store.load(episode_id)


def between(page: str, start: str, end: str) -> str:
    """The part of ``page`` after the first ``start``, up to the next ``end``."""
    assert start in page, start
    return page.split(start, 1)[1].split(end, 1)[0]


def game_part(page: str) -> str:
    """The page's game summary (from its heading to the transcript's)."""
    return between(page, '<h2 id="game">Game</h2>', "<h2>Transcript")


def transcript_part(page: str) -> str:
    return between(page, '<section class="transcript-all">', "</section>")


def phases_of(part: str) -> list[tuple[str, str]]:
    """The (cycle, phase) of each phase section in ``part``, in order."""
    return re.findall(r'<div class="phase" data-phase="([^"]*)" data-cycle="(\d+)">', part)


def phase_divs(part: str) -> list[str]:
    """Each phase section's HTML in ``part``, in order."""
    return part.split('<div class="phase" ')[1:]


def announced_phases(entries: list[ConversationEntry]) -> list[tuple[str, str]]:
    """The (phase, cycle) of each phase the game announced to everyone, read from the log."""
    found = []
    for entry in entries:
        match = re.match(r"Cycle (\d+), ([\w-]+)[.:]", entry.content)
        if entry.sender == ENVIRONMENT_SENDER and entry.to is None and match:
            found.append((match.group(2), match.group(1)))
    return found


def shown_text(entry: ConversationEntry) -> str:
    """An entry's text as the page shows it, escaped."""
    return str(escape(entry.content if entry.action is None else entry.action.argument))


def test_a_finished_game_shows_every_role_the_winners_and_each_payoff(
    played_games: Games,
) -> None:
    for episode_id in (played_games.werewolf, played_games.bargain):
        record = load(played_games, episode_id)
        outcome = games.outcome_of(record.spec, record.entries)
        summary = game_part(render_episode(record))
        table = between(summary, '<table class="roles">', "</table>")
        rows = ROW.findall(table)
        assert rows == [
            (
                str(escape(p.name)),
                p.role,
                p.team,
                "alive" if p.alive else "out",
                "won" if p.won else "lost",
                f"{p.payoff:g}",
            )
            for p in outcome.players
        ]
        assert f"<strong>{', '.join(outcome.winners)}</strong>" in summary
        assert outcome.reason in summary and "No outcome" not in summary
    bargain = game_part(render_episode(load(played_games, played_games.bargain)))
    assert f"deal at {DEAL}" in bargain
    # The seller earns DEAL - 40, the buyer 80 - DEAL (examples/games/bargaining.json).
    assert {row[1]: row[5] for row in ROW.findall(bargain)} == {
        "seller": f"{DEAL - 40:g}",
        "buyer": f"{80 - DEAL:g}",
    }


def test_the_transcript_is_cut_into_the_phases_with_every_vote_tally_and_elimination(
    played_games: Games,
) -> None:
    record = load(played_games, played_games.werewolf)
    page = render_episode(record)
    transcript = transcript_part(page)
    announced = announced_phases(record.entries)
    assert phases_of(transcript) == [("start", "0"), *announced]
    assert {"night-chat", "seer", "night-kill", "day-vote"} <= {name for name, _ in announced}
    # Each phase's votes, from the log: the target moves made after its announcement.
    votes: list[list[ConversationEntry]] = []
    for entry in record.entries:
        if announced_phases([entry]):
            votes.append([])
        elif votes and entry.move is not None and entry.move.target is not None:
            votes[-1].append(entry)
    divs = phase_divs(transcript)[1:]
    assert record.spec.game is not None
    plurality = {
        action.name
        for phase in record.spec.game.phases
        for action in phase.actions
        if action.resolution == "plurality"
    }
    assert plurality == {"vote", "kill"}
    assert len(divs) == len(votes)
    eliminated_shown = []
    for div, chosen in zip(divs, votes, strict=True):
        rows = re.findall(r"<tr class=\"(?:public|private)\"><td>(.*?)</td><td>(.*?)[ <]", div)
        assert rows == [(str(escape(e.sender)), e.move.move) for e in chosen if e.move]
        last = {e.sender: e.move.target for e in chosen if e.move and e.move.move in plurality}
        for target, count in Counter(last.values()).items():
            assert f'<span class="count">{escape(target)} {count}</span>' in div
        eliminated_shown += re.findall(r'<p class="eliminated">eliminated: (.*?)</p>', div)
    outcome = games.outcome_of(record.spec, record.entries)
    out = [str(escape(p.name)) for p in outcome.players if not p.alive]
    assert sorted(eliminated_shown) == sorted(out) and out
    # The tallies the game announced are shown with the phase they closed.
    for entry in record.entries:
        if entry.content.startswith(("vote in day-vote: ", "kill in night-kill: ")):
            assert f"announced: {escape(entry.content)}" in transcript


def test_a_villagers_view_from_the_server_has_no_night_chat_and_no_seer_result(
    played_games: Games,
) -> None:
    record = load(played_games, played_games.werewolf)
    with played_games.store() as store:
        page = served(store, played_games.werewolf)
    outcome = games.outcome_of(record.spec, record.entries)
    roles = {p.name: p.role for p in outcome.players}
    views = agent_sections(page)
    assert set(views) == set(record.spec.agent_names)
    wolves = [name for name, role in roles.items() if role == "werewolf"]
    seer = next(name for name, role in roles.items() if role == "seer")
    night_chat = [
        e for e in record.entries if e.move is not None and e.move.is_speech and e.to is not None
    ]
    inspection = [e for e in record.entries if e.to == (seer,) and " is a " in e.content]
    assert night_chat and inspection
    for villager in (name for name, role in roles.items() if role == "villager"):
        view = views[villager]
        for private in night_chat + inspection:
            assert shown_text(private) not in view
        assert "kill in night-kill" not in view
        # Nothing private in its view but what was told to it alone (its role).
        markers = re.findall(r'<span class="private-marker">(.*?)</span>', view)
        assert markers == [f"private to {escape(villager)}"]
        assert "your role is werewolf" not in view
        # What the villager could see is there: the day's talk, its own role, the night falling.
        assert f"{escape(villager)}, your role is villager" in view
        day_talk = next(e for e in record.entries if e.move and e.move.is_speech and not e.to)
        assert shown_text(day_talk) in view
        assert ("night-chat", "1") in phases_of(view)
    for wolf in wolves:
        assert all(shown_text(e) in views[wolf] for e in night_chat)
    assert all(shown_text(e) in views[seer] for e in inspection)


def test_a_game_not_over_shows_no_roles_and_says_why(played_games: Games) -> None:
    failed = load(played_games, played_games.failed)
    assert failed.status is EpisodeStatus.FAILED
    finished = load(played_games, played_games.werewolf)
    cut = finished.events[: len(finished.events) // 2]
    unfinished = [
        failed,
        finished.model_copy(
            update={"episode_id": "running", "status": EpisodeStatus.RUNNING, "events": cut}
        ),
        # Its log is the whole game, but the record says it was interrupted.
        finished.model_copy(update={"episode_id": "cut-off", "status": EpisodeStatus.INCOMPLETE}),
        # Said to be complete, but its log stops halfway: no outcome follows from it.
        finished.model_copy(update={"episode_id": "cut", "events": cut}),
    ]
    for record in unfinished:
        summary = game_part(render_episode(record))
        assert '<table class="roles">' not in summary
        assert "No outcome, and no roles shown" in summary
        assert "werewolf <span" in summary  # the rules' role counts are still there
        assert not re.search(r"<td>(villager|seer|doctor)</td>", summary)
    assert str(escape(failed.reason)) in game_part(render_episode(failed))
    assert "cannot be recomputed" in game_part(render_episode(unfinished[-1]))


def test_untrusted_text_of_a_game_is_escaped(played_games: Games) -> None:
    page = render_episode(load(played_games, played_games.werewolf))
    assert "<script" not in page.lower() and "<i>trust" not in page and "<b>lied" not in page
    assert str(escape(MARKUP)) in transcript_part(page)
    votes = between(transcript_part(page), '<table class="votes">', "</table>")
    assert f'<td class="text">{escape(VOTE_REASON)}</td>' in votes


def test_the_static_file_shows_a_game_as_the_server_does(played_games: Games) -> None:
    with played_games.store() as store:
        summaries = store.summaries()
        records = [store.load(summary.episode_id) for summary in summaries]
    page = render_static(records, summaries)
    section = between(page, f'id="episode-{played_games.werewolf}"', "</section>\n<section")
    assert '<table class="roles">' in section and '<div class="phase"' in section
    failed = between(page, f'id="episode-{played_games.failed}"', "</section>\n")
    assert '<table class="roles">' not in failed


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), name=st.sampled_from(["werewolf", "werewolf_witch"]))
def test_no_players_view_shows_what_it_could_not_see(seed: int, name: str) -> None:
    spec = example(name, seed=seed)
    players = [games.RandomPlayer(player, seed) for player in spec.agent_names]
    record = record_of_result(asyncio.run(games.run_game(spec, players)))
    page = render_episode(record)
    views = agent_sections(page)
    for player in spec.agent_names:
        view = views[player]
        shown = re.findall(r'<li class="(?:public|private)" data-event="([^"]*)">', view)
        assert shown == [
            entry.event_id
            for entry in record.entries
            if not entry.is_nothing and entry.visible_to(player)
        ]
        assert phases_of(view)[1:] == announced_phases(record.entries)
        assert '<table class="votes">' not in view and "tally" not in view
