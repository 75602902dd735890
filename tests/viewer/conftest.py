"""Fixtures of the viewer's tests: the seeded store (made once: the tests only read it),
and where browser screenshots go."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from viewer_support import Games, Seeded, games_store, seeded_store


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A store of real episodes (see :mod:`viewer_support`)."""
    with seeded_store(tmp_path_factory.mktemp("viewer")) as made:
        yield made


@pytest.fixture(scope="session")
def played_games(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Games]:
    """A store of games played in-process (see :mod:`viewer_support`)."""
    with games_store(tmp_path_factory.mktemp("games")) as made:
        yield made


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    """Where browser tests save screenshots: ``$SOTOPIA_ARE_SCREENSHOTS`` if set (to keep
    them), else the test's tmp dir."""
    directory = Path(os.environ.get("SOTOPIA_ARE_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory
