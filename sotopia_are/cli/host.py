"""`sotopia-are host`: people play seats of an episode or a game from a browser, LLM agents
the others (:func:`sotopia_are.hosting.host`)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from .common import INTERRUPTED_EXIT, cli_errors, fail, load_spec, read_text
from .options import (
    MaxTurnsOption,
    ModelOptions,
    PreflightOption,
    StoreOptions,
    with_models,
    with_store,
)

__all__ = ["host_command"]


@with_models
@with_store
def host_command(
    models: ModelOptions,
    where: StoreOptions,
    spec_file: Annotated[
        Path,
        typer.Argument(
            help="An episode spec or a game (JSON, as in examples/).", show_default=False
        ),
    ],
    human: Annotated[
        list[str],
        typer.Option(
            "--human", help="A seat a person plays (repeat for several).", show_default=False
        ),
    ],
    sessions: Annotated[
        int, typer.Option("--sessions", min=1, help="How many sessions to host at once.")
    ] = 1,
    bind: Annotated[
        str,
        typer.Option(
            "--host", help="The address to serve on (only this machine by default; others warn)."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="The port; 0 picks a free one.")
    ] = 8000,
    root_path: Annotated[
        str, typer.Option("--root-path", help="The path prefix a reverse proxy strips.")
    ] = "",
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            help="The address people reach the study at (default: http://HOST:PORT/ROOT).",
            show_default=False,
        ),
    ] = None,
    turn_timeout: Annotated[
        float,
        typer.Option("--turn-timeout", min=1.0, help="Seconds a person has for a turn."),
    ] = 120.0,
    completion_code: Annotated[
        str, typer.Option("--completion-code", help="Shown to each person at the end.")
    ] = "",
    consent: Annotated[
        Path | None,
        typer.Option(
            "--consent",
            help="A text file each person reads and agrees to before taking their seat.",
            show_default=False,
        ),
    ] = None,
    waiting_room: Annotated[
        bool,
        typer.Option(
            "--waiting-room",
            help="One link for everyone: people are seated in order of arrival.",
        ),
    ] = False,
    fill_after: Annotated[
        float | None,
        typer.Option(
            "--fill-after",
            min=1.0,
            help="Seconds after a session's first arrival to fill its empty seats with --model.",
            show_default=False,
        ),
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option("--fresh", help="Do not resume an unfinished study stored under --tag."),
    ] = False,
    tag: Annotated[
        str, typer.Option("--tag", help="Tag the stored sessions (and name the study).")
    ] = "hosted",
    max_turns: MaxTurnsOption = None,
    preflight: PreflightOption = True,
) -> None:
    """Host an episode or a game for people: prints `join <seat>: <url>` per human seat (or
    one `waiting room: <url>`) and `monitor: <url>`, plays each session once its people
    have arrived (LLM agents on --model the other seats), stores each as it is played
    (human seats as "human") and exits when every session is over. Run it again with the
    same --tag after a crash to resume the study (the links stay valid). Rate the sessions
    afterwards with `sotopia-are evaluate`."""
    # Here, not at the top: the server's stack would slow every command's --help.
    from sotopia_are.hosting import ExposedHostWarning, host

    spec = load_spec(spec_file)
    if max_turns is not None:
        spec = spec.replace(max_turns=max_turns)
    consent_text = _read_consent(consent) if consent is not None else ""
    study = models.study(where, tag=tag, evaluate=False)
    with where.open() as store, cli_errors():
        seated = [n for n in spec.agent_names if fill_after is not None or n not in human]
        chosen = study.agent_models(seated)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ExposedHostWarning)
            try:
                records = host(
                    spec,
                    human,
                    models=chosen or None,
                    llm=study.session(),
                    sampling=study.sampling,
                    sessions=sessions,
                    store=store,
                    tag=tag,
                    turn_timeout=turn_timeout,
                    completion_code=completion_code,
                    by_arrival=waiting_room,
                    fill_after=fill_after,
                    resume=not fresh,
                    consent=consent_text,
                    host=bind,
                    port=port,
                    root_path=root_path,
                    public_url=public_url,
                    preflight=preflight,
                    on_line=lambda line: _announce(line, caught),
                )
            except KeyboardInterrupt:
                raise typer.Exit(code=INTERRUPTED_EXIT) from None
            except OSError as error:
                fail(f"cannot serve on {bind}:{port}: {error.strerror or error}")
        for record in records:
            typer.echo(f"stored {record.episode_id}: {record.status.value}")


def _read_consent(path: Path) -> str:
    text = read_text(path).strip()
    if not text:
        fail(f"the consent text {path} is empty")
    return text


def _announce(line: str, caught: list[warnings.WarningMessage]) -> None:
    """Print ``line``, after any warning given so far (on stderr)."""
    while caught:
        typer.echo(f"warning: {caught.pop(0).message}", err=True)
    typer.echo(line)
