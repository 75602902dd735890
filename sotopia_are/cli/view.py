"""`sotopia-are view`: the stored episodes in a browser, served locally or written as one
static HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sotopia_are import studies

from .common import INTERRUPTED_EXIT, cli_errors, fail
from .options import StoreOptions, with_store

__all__ = ["view"]


def _ready(url: str) -> None:
    typer.echo(f"viewer at {url} (Ctrl-C stops it)")


@with_store
def view(
    where: StoreOptions,
    host: Annotated[
        str, typer.Option("--host", help="The address to serve on (only this machine by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="The port to serve on; 0 picks a free one."),
    ] = 8765,
    static: Annotated[
        Path | None,
        typer.Option(
            "--static",
            help="Write the viewer as one self-contained HTML file instead of serving it.",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Only the episodes with this tag.", show_default=False),
    ] = None,
) -> None:
    """Look at the stored episodes in a browser: the list with filters (tag, model,
    status, score), each episode's transcript, every agent's view (private actions
    marked), each verdict's reasoning per dimension, every model call with its prompt and
    reply, and each batch's score distributions."""
    # Here, not at the top: the server's stack would slow every command's --help.
    from sotopia_are.viewer import serve, static_page

    with where.open() as store:
        if static is not None:
            with cli_errors():
                studies.write_text_atomically(str(static), static_page(store, tag=tag))
            typer.echo(f"wrote {static}")
            return
        try:
            serve(store, host, port, tag=tag, on_ready=_ready)
        except KeyboardInterrupt:
            raise typer.Exit(code=INTERRUPTED_EXIT) from None
        except OSError as error:
            fail(
                f"cannot serve on {host}:{port}: {error.strerror or error}; pass another "
                "--port (0 picks a free one) or --host"
            )
