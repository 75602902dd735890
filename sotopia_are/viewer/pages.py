"""The viewer's HTML pages, rendered from the Jinja2 templates beside this module.

Every value from an episode (names, speech, prompts, model answers, reasoning) is
untrusted text: the templates escape all of it (autoescape is on, nothing is marked
safe but this package's own script), and each page carries a Content-Security-Policy
that lets no script run but that one, so even text that slipped through could not.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from sotopia_are.record import EpisodeRecord, EpisodeSummary
from sotopia_are.social import ConversationEntry, EpisodeStatus

from .filters import EpisodeFilter
from .game import PhaseSection, game_view, phase_sections
from .summary import TagSummary, tag_detail, tag_summaries

__all__ = [
    "SERVED",
    "STATIC",
    "Links",
    "content_security_policy",
    "render_episode",
    "render_index",
    "render_message",
    "render_static",
    "render_tag",
]

TEMPLATES = Path(__file__).parent / "templates"

_KINDS = {
    "speak": "said",
    "non-verbal communication": "non-verbal",
    "action": "action",
    "leave": "left",
    "none": "did nothing",
}


@dataclass(frozen=True)
class Links:
    """Where a page's links lead: the server's paths, or anchors in one static file."""

    static: bool

    def index(self) -> str:
        """The episode list."""
        return "#index" if self.static else "/"

    def episode(self, episode_id: str) -> str:
        """One episode's page."""
        quoted = urllib.parse.quote(episode_id, safe="")
        return f"#episode-{quoted}" if self.static else f"/episode/{quoted}"

    def tag(self, tag: str) -> str:
        """One tag's batch summary."""
        quoted = urllib.parse.quote(tag, safe="")
        return f"#tag-{quoted}" if self.static else f"/tag/{quoted}"


SERVED = Links(static=False)
STATIC = Links(static=True)


@dataclass(frozen=True)
class Line:
    """One transcript line as the page shows it: who did what, and for whom when it was
    private (``audience``); ``event_id`` names the event it shows."""

    turn: int
    event_id: str
    sender: str
    kind: str
    text: str
    audience: tuple[str, ...] | None

    @property
    def private(self) -> bool:
        """Whether only some participants could perceive it."""
        return self.audience is not None


def _line(entry: ConversationEntry) -> Line:
    if entry.action is None:
        return Line(entry.turn, entry.event_id, entry.sender, "message", entry.content, entry.to)
    kind = _KINDS.get(entry.action.action_type, entry.action.action_type)
    return Line(entry.turn, entry.event_id, entry.sender, kind, entry.action.argument, entry.to)


def _lines(entries: Iterable[ConversationEntry]) -> list[Line]:
    """The lines of ``entries``; doing nothing is left out, as in every transcript."""
    return [_line(entry) for entry in entries if not entry.is_nothing]


@dataclass(frozen=True)
class Part:
    """A stretch of a transcript: a game's phase (``section``, whose title heads it), or
    a whole conversation (``section`` None)."""

    lines: list[Line]
    section: PhaseSection | None = None


def _parts(sections: Iterable[PhaseSection]) -> list[Part]:
    return [Part(_lines(section.entries), section) for section in sections]


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals["statuses"] = [status.value for status in EpisodeStatus]
    return environment


@functools.cache
def _script() -> str:
    """The static file's filter script (the one script any page runs)."""
    return (TEMPLATES / "filter.js").read_text(encoding="utf-8")


def content_security_policy(*, static: bool) -> str:
    """The pages' policy: nothing loads from anywhere, inline styles and SVG only, and
    the static file's own script (by its hash) is the only one that may run."""
    scripts = "'none'"
    if static:
        digest = hashlib.sha256(_script().encode("utf-8")).digest()
        scripts = f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {scripts}; "
        "form-action 'self'; base-uri 'none'"
    )


def _render(template: str, *, static: bool = False, **context: Any) -> str:
    return (
        _environment()
        .get_template(template)
        .render(
            links=STATIC if static else SERVED,
            policy=content_security_policy(static=static),
            script=_script() if static else "",
            **context,
        )
    )


def _choices(summaries: Sequence[EpisodeSummary]) -> dict[str, Any]:
    """The tags and models a filter can choose from (the empty tag is not one: the
    empty choice means any tag)."""
    return {
        "tag_names": sorted({summary.tag for summary in summaries if summary.tag}),
        "model_names": sorted(
            {model for summary in summaries for model in summary.models if model}
        ),
    }


def render_index(summaries: Sequence[EpisodeSummary], selected: EpisodeFilter | None = None) -> str:
    """The served episode list: the episodes of ``summaries`` that ``selected`` matches,
    the filter form (its choices from all of ``summaries``), and the summary of each tag
    with the distribution of its overall scores."""
    chosen = selected or EpisodeFilter()
    return _render(
        "index.html",
        title="episodes",
        episodes=chosen.select(summaries),
        total=len(summaries),
        selected=chosen,
        tags=tag_summaries(summaries),
        **_choices(summaries),
    )


def render_episode(record: EpisodeRecord) -> str:
    """One episode's page: its spec, the full transcript (private actions marked), each
    agent's view, every verdict with its reasoning per dimension, failures and warnings,
    and every model call with its prompt and reply.

    A game's page also shows its rules in brief, the outcome and every player's role (only
    once the game is over), and both the transcript and each agent's view cut into the
    game's phases, each phase of the transcript with its votes, tally and eliminations."""
    return _render("episode.html", title=record.episode_id, **_episode_context(record))


def _episode_context(record: EpisodeRecord) -> dict[str, Any]:
    views = record.views
    game = game_view(record)
    if game is None:
        transcript = [Part(_lines(views.entries))]
        seen = {name: [Part(_lines(view.entries))] for name, view in views.agents.items()}
    else:
        transcript = _parts(game.sections)
        # Cut at the phases' announcements, which everyone hears; what a player saw of a
        # phase is only what its view holds (no votes or tallies added from elsewhere).
        seen = {
            name: _parts(phase_sections(game.rules, view.entries))
            for name, view in views.agents.items()
        }
    return {
        "record": record,
        "background": record.spec.background().to_natural_language(),
        "game": game,
        "transcript": transcript,
        "views": [
            (name, view.background.to_natural_language(), seen[name])
            for name, view in views.agents.items()
        ],
        "usage": record.usage.describe(),
    }


def render_tag(tag: str, records: Iterable[EpisodeRecord]) -> str:
    """A batch summary: the distributions of the scores of ``records`` (the episodes of
    ``tag``) per dimension, and each model's mean and spread per dimension."""
    return _render("tag.html", title=f"tag {tag}", detail=tag_detail(tag, records))


def render_message(title: str, message: str) -> str:
    """A served page saying ``message`` (an episode that is not stored, a bad filter)."""
    return _render("message.html", title=title, message=message)


def render_static(records: Sequence[EpisodeRecord], summaries: Sequence[EpisodeSummary]) -> str:
    """One self-contained HTML file: the list of ``summaries`` (filtered in the page by a
    small script), every tag's summary and distributions, and every one of ``records``
    (the episodes of ``summaries``), each reached by an anchor."""
    by_tag: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        by_tag.setdefault(record.tag, []).append(record)
    tags: list[TagSummary] = tag_summaries(summaries)
    return _render(
        "static.html",
        static=True,
        title="episodes",
        episodes=summaries,
        total=len(summaries),
        selected=EpisodeFilter(),
        tags=tags,
        details=[tag_detail(tag.tag, by_tag.get(tag.tag, [])) for tag in tags],
        records=[_episode_context(record) for record in records],
        **_choices(summaries),
    )
