"""`sotopia-are demo`: the product end to end in one command, offline by default.

With no model it replays two human-written example scripts through the engine
(``ScriptedAgent``s): the bakery negotiation, and the three-agent garden committee with
its private message. Both are stored in Redis (the embedded one unless ``REDIS_OM_URL``
says otherwise); it prints the transcripts, one agent's view read back from the store (the
private message missing from it), and exports the garden episode as ARE JSON, checking
that the file imports back. With a model (``--model`` or ``SOTOPIA_ARE_MODEL``) it runs
the bakery scenario LLM vs LLM instead, rates it with the judge, and does the same.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

import sotopia_are as sa
from sotopia_are import studies

from .common import cli_errors, fail, load_spec, read_text
from .episodes import play_here, print_record, print_transcript, unusable
from .options import ModelOptions, StoreOptions, with_models, with_store

__all__ = ["demo"]

DEMO_TAG = "demo"
NEGOTIATION = "bakery_negotiation"
PRIVATE = "garden_committee"
# In the garden script Jo tells Ines something privately; Benedikt's view shows it is hidden.
PRIVATE_VIEWER = "Benedikt Müller-Roth"


def _examples_dir(given: Path | None) -> Path:
    """``given``, else the examples shipped in the wheel, else those of the checkout the
    package is installed from (an editable install), else ``./examples``."""
    package = Path(sa.__file__).resolve().parent
    candidates = (
        [given]
        if given is not None
        else [package / "examples", package.parent / "examples", Path.cwd() / "examples"]
    )
    for candidate in candidates:
        if (candidate / "scripts" / f"{NEGOTIATION}.txt").is_file():
            return candidate
    fail(
        f"the example files are not in {' or '.join(str(c) for c in candidates)}; run the "
        "demo from the repository's root or pass --examples DIR"
    )


def _fresh_id(name: str) -> str:
    # A new id per run: the demo can be run again and again on the same store.
    return studies.fresh_episode_id(f"demo-{name.replace('_', '-')}")


def _replay(store: sa.EpisodeStore, examples: Path, name: str) -> sa.EpisodeRecord:
    """Replay ``examples/scripts/<name>.txt`` (context ``scenarios/<name>.json``), stored."""
    base = load_spec(examples / "scenarios" / f"{name}.json")
    text = read_text(examples / "scripts" / f"{name}.txt")
    record = play_here(
        store,
        base.replace(episode_id=_fresh_id(name)),
        script=text,
        tag=DEMO_TAG,
        scenario_id=base.stable_name(),
    )
    print_record(record)
    typer.echo(f"stored as {record.episode_id}\n")
    return record


def _show_view(store: sa.EpisodeStore, episode_id: str, viewer: str) -> None:
    """``viewer``'s view of the stored episode, read back from the store."""
    views = store.load(episode_id).views
    hidden = [entry for entry in views.entries if not entry.visible_to(viewer)]
    print_transcript(
        f"{episode_id} as {viewer} saw it (read back from the store)",
        views.agents[viewer].transcript(),
    )
    typer.echo(
        f"\n{len(hidden)} private action(s) hidden from {viewer}: "
        + "; ".join(entry.render() for entry in hidden)
        if hidden
        else f"\nnothing was hidden from {viewer}"
    )


def _export(store: sa.EpisodeStore, episode_id: str, output: Path) -> None:
    events = studies.export_are_file(store, episode_id, output)
    typer.echo(
        f"\nexported {episode_id} as ARE JSON to {output} "
        f"({events} completed events; it imports back)"
    )


@with_models
@with_store
def demo(
    models: ModelOptions,
    where: StoreOptions,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the ARE JSON export.")
    ] = Path("sotopia-are-demo.json"),
    examples: Annotated[
        Path | None,
        typer.Option(
            "--examples",
            help="The examples directory (default: those installed with the package, else "
            "./examples).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Replay human-written example scripts through the engine (no model needed), store
    them, show a transcript and an agent's private view, export ARE JSON. With --model:
    LLM vs LLM on the example scenario, rated by the judge. Exits 1 if that episode failed
    or the judge could not rate it, 130 on Ctrl-C."""
    folder = _examples_dir(examples)
    with where.open() as store, cli_errors():
        typer.echo(f"sotopia-are demo: episodes are stored in {store.location}")
        if models.model is None and not models.agent_model:
            _replay(store, folder, NEGOTIATION)
            spec = _replay(store, folder, PRIVATE).spec
            _show_view(store, spec.episode_id, PRIVATE_VIEWER)
            failed = False
        else:
            base = load_spec(folder / "scenarios" / f"{NEGOTIATION}.json")
            spec = base.replace(episode_id=_fresh_id(NEGOTIATION))
            chosen = models.agent_models(spec.agent_names)
            session = sa.LLMSession(models.config())
            # With --agent-model only, the first agent's model judges.
            judge = models.judge(session, fallback=next(iter(chosen.values())))
            record = play_here(
                store,
                spec,
                models=chosen,
                session=session,
                sampling=models.agent_sampling(),
                judge=judge,
                tag=DEMO_TAG,
                scenario_id=base.stable_name(),
            )
            print_record(record)
            failed = unusable(record, judge.model)
            typer.echo(f"stored as {spec.episode_id}\n")
            _show_view(store, spec.episode_id, spec.agent_names[1])
        _export(store, spec.episode_id, output)
        typer.echo(
            f"next: sotopia-are show {spec.episode_id} --as {shlex.quote(spec.agent_names[0])}"
            f"  |  sotopia-are list --tag {DEMO_TAG}"
        )
        if failed:
            raise typer.Exit(code=1)
