"""Run the local OpenAI-compatible test server standalone: an offline dry run.

``python -m sotopia_are.testing [--port 8000] [--latency 0.05] [--reply TEXT]`` serves
until interrupted. By default it plays along (:func:`~sotopia_are.testing.play_rule`): a
request with a JSON schema gets a valid, varied instance of it — agents speak, gesture,
whisper and leave near the end; the judge gives valid ratings — so ``sotopia-are demo``,
``run``, ``batch`` and ``evaluate`` with ``--model openai/<any> --api-base
http://127.0.0.1:8000/v1`` play and rate episodes without a model; other requests are
echoed. ``--simple`` answers with the simplest valid instance instead (agents always
speak), ``--random [--seed N]`` with random instances of the schema sent (what a server
enforcing the schema may answer; see :mod:`sotopia_are.testing.random_schema`),
``--reply TEXT`` with a fixed text.
"""

from __future__ import annotations

import argparse
import contextlib

from sotopia_are.testing.play import play_rule
from sotopia_are.testing.random_schema import random_schema_rule
from sotopia_are.testing.replies import Rule, schema_rule
from sotopia_are.testing.server import LocalLLMServer

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and serve until Ctrl-C; exit 1 with one ``error:`` line when the
    address cannot be bound (a port in use)."""
    parser = argparse.ArgumentParser(prog="python -m sotopia_are.testing", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--reply", default=None, help="answer every request with this text")
    answers = parser.add_mutually_exclusive_group()
    answers.add_argument(
        "--simple", action="store_true", help="the simplest valid answers (agents always speak)"
    )
    answers.add_argument(
        "--random", action="store_true", help="random instances of the schema sent"
    )
    parser.add_argument("--seed", type=int, default=0, help="the seed of --random")
    args = parser.parse_args(argv)
    fixed: str | None = args.reply
    rule: Rule
    if fixed is not None:
        rule = lambda _request: fixed  # noqa: E731
    elif args.random:
        rule = random_schema_rule(args.seed)
    else:
        rule = schema_rule if args.simple else play_rule
    server = LocalLLMServer(rule, host=args.host, port=args.port, latency=args.latency)
    try:
        server.start()
    except OSError as error:
        # A port in use (or a host not on this machine) is the user's to fix: no traceback.
        parser.exit(
            1,
            f"error: cannot serve on {args.host}:{args.port}: {error.strerror or error}; "
            "pass another --port (0 picks a free one) or --host\n",
        )
    print(f"OpenAI-compatible test server at {server.url} (model: openai/<any name>)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
