"""Fixtures of the training tests: a store on the embedded Redis, and the rl extra."""

from collections.abc import Iterator

import pytest

from sotopia_are.storage import EpisodeStore, connect

pytest.importorskip("pettingzoo", reason="the rl extra is not installed: pip install -e '.[rl]'")


@pytest.fixture
def store(storage_data_dir: str) -> Iterator[EpisodeStore]:
    with connect() as opened:
        yield opened
