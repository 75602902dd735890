"""Test support: a local OpenAI-compatible server with scripted replies.

Tests, examples and benchmarks point litellm at it (``model="openai/test-model"``,
``api_base=server.url``) so the real HTTP path is exercised without a real model.
"""

from sotopia_are.testing.play import play_rule
from sotopia_are.testing.random_schema import random_instance, random_schema_rule
from sotopia_are.testing.replies import Reply, ReplyLike, Rule, echo_rule, schema_rule
from sotopia_are.testing.server import LocalLLMServer, ReceivedRequest

__all__ = [
    "LocalLLMServer",
    "ReceivedRequest",
    "Reply",
    "ReplyLike",
    "Rule",
    "echo_rule",
    "play_rule",
    "random_instance",
    "random_schema_rule",
    "schema_rule",
]
