"""Fixtures of the training tests: the rl extra (the store is the suite's `store`)."""

import pytest

pytest.importorskip("pettingzoo", reason="the rl extra is not installed: pip install -e '.[rl]'")
