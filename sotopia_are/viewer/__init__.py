"""The browser view of stored episodes: a list with filters, each episode in full (the
transcript, every agent's view, every verdict's reasoning, every model call; for a game
also its phases, votes, tallies, eliminations and, once it is over, roles and outcome)
and each batch's score distributions; served locally or written as one static HTML file.

Read-only over the store. Episode text is untrusted: every page escapes it and runs no
script of its own but the static file's filters.
"""

from .filters import EpisodeFilter
from .pages import render_episode, render_index, render_message, render_static, render_tag
from .plots import Bar, Histogram, histogram
from .server import ViewerApp, ViewerServer, serve, static_page
from .summary import DimensionStats, TagDetail, TagSummary, tag_detail, tag_summaries

__all__ = [
    "Bar",
    "DimensionStats",
    "EpisodeFilter",
    "Histogram",
    "TagDetail",
    "TagSummary",
    "ViewerApp",
    "ViewerServer",
    "histogram",
    "render_episode",
    "render_index",
    "render_message",
    "render_static",
    "render_tag",
    "serve",
    "static_page",
    "tag_detail",
    "tag_summaries",
]
