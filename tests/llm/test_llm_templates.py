"""Prompt templates: chat-message convention, strict variables, packaged location."""

from pathlib import Path

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm import Message, PromptLibrary, TemplateError, packaged_prompts_dir


def test_blocks_become_messages_in_order(prompts: PromptLibrary) -> None:
    messages = prompts.render("test/fewshot.j2", {"question": "Grass?", "prefill": ""})
    assert messages == [
        Message(role="system", content="Answer in one word."),
        Message(role="user", content="Colour of the sky?"),
        Message(role="assistant", content="Blue"),
        Message(role="user", content="Grass?"),
    ]  # the empty prefill block is dropped


def test_a_template_without_blocks_is_one_user_message(prompts: PromptLibrary) -> None:
    assert prompts.render("test/plain.j2", {"word": "hi"}) == [
        Message(role="user", content="Say hi.")
    ]


def test_a_missing_variable_is_an_error_naming_it(prompts: PromptLibrary) -> None:
    with pytest.raises(TemplateError, match=r"'test/ask\.j2': 'question' is undefined"):
        prompts.render("test/ask.j2", {"persona": "Mara"})


def test_unknown_broken_and_misnamed_templates_are_errors(prompts: PromptLibrary) -> None:
    with pytest.raises(TemplateError, match=r"'test/nope\.j2' not found"):
        prompts.render("test/nope.j2", {})
    with pytest.raises(TemplateError, match=r"'test/broken\.j2', line 1"):
        prompts.render("test/broken.j2", {})
    with pytest.raises(TemplateError, match="block 'narrator' is not a message"):
        prompts.render("test/bad_block.j2", {})


@given(st.text())
def test_variable_content_cannot_forge_messages(text: str) -> None:
    prompts = PromptLibrary(Path(__file__).parent / "prompts")
    messages = prompts.render("test/ask.j2", {"persona": "Mara", "question": text})
    assert [m.role for m in messages] == (["system", "user"] if text.strip() else ["system"])


def test_templates_load_from_the_package_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "prompts" / "llm").mkdir(parents=True)
    (tmp_path / "prompts" / "llm" / "repair.j2").write_text("HIJACKED")
    monkeypatch.chdir(tmp_path)
    library = PromptLibrary()
    assert tmp_path not in packaged_prompts_dir().parents
    assert "llm/repair.j2" in library.names() and "llm/format_instructions.j2" in library.names()
    [message] = library.render("llm/repair.j2", {"error": "E", "schema": "{}"})
    assert "HIJACKED" not in message.content and "E" in message.content


def test_extra_directories_override_packaged_templates(tmp_path: Path) -> None:
    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "repair.j2").write_text("custom {{ error }}")
    [message] = PromptLibrary(tmp_path).render("llm/repair.j2", {"error": "E", "schema": "{}"})
    assert message.content == "custom E"


PLAIN = "{% block system %}You are {{ name }}, turn {{ turn }}.{% endblock %}"
FILTERED = "{% block system %}You are {{ name | upper }}{{ range(2) | list }}.{% endblock %}"


@settings(deadline=None, max_examples=50)
@given(
    names=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6),
    turns=st.lists(st.integers(-3, 3) | st.booleans() | st.floats(-1, 1), min_size=1),
)
def test_a_plain_block_kept_by_its_values_renders_as_jinja_does(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], turns: list[object]
) -> None:
    # A block of text and variables only is kept by its variables' values: each render,
    # kept or not, says what Jinja renders (True and 1, 1 and 1.0 are equal values, not
    # the same text).
    directory = tmp_path_factory.mktemp("plain")
    (directory / "plain.j2").write_text(PLAIN)
    (directory / "filtered.j2").write_text(FILTERED)
    library = PromptLibrary(directory)
    for template, source in (("plain.j2", PLAIN), ("filtered.j2", FILTERED)):
        reference = jinja2.Template(source)
        for name in names:
            for turn in [*turns, *turns]:
                expected = reference.render(name=name, turn=turn).strip()
                got = library.render(template, {"name": name, "turn": turn})
                assert got == ([Message(role="system", content=expected)] if expected else [])


def test_a_plain_block_still_needs_its_variables(tmp_path: Path) -> None:
    (tmp_path / "plain.j2").write_text(PLAIN)
    library = PromptLibrary(tmp_path)
    library.render("plain.j2", {"name": "Ada", "turn": 1})
    with pytest.raises(TemplateError, match="'turn' is undefined"):
        library.render("plain.j2", {"name": "Ada"})


GLOBALS_USED = {
    # A template that reads only its variables (its context's parent is the variables).
    "own.j2": "{% block user %}{% for x in items %}{{ x }}-{% endfor %}{{ name }}{% endblock %}",
    # A global read in a block, in a macro, and by an included or imported template: the
    # globals are merged in, as Jinja's own context has them.
    "block_global.j2": "{% block user %}{{ name }}{{ range(3) | list }}{% endblock %}",
    "macro_global.j2": (
        "{% block user %}{% macro m() %}{{ dict(a=name) }}{% endmacro %}{{ m() }}{% endblock %}"
    ),
    "included.j2": "{{ name }}{{ range(2) | list }}",
    "includes.j2": "{% block user %}{% include 'included.j2' %}{% endblock %}",
    "imports.j2": (
        "{% block user %}{% import 'lib.j2' as lib %}{{ lib.show(name) }}{% endblock %}"
    ),
    "lib.j2": "{% macro show(n) %}{{ n }}{{ range(2) | list }}{% endmacro %}",
    # A variable named like a global shadows it, either way.
    "shadow.j2": "{% block user %}{{ range }}{{ name }}{% endblock %}",
}


@settings(deadline=None, max_examples=25)
@given(name=st.text(max_size=6), items=st.lists(st.integers(), max_size=3))
def test_a_render_reads_the_globals_jinja_gives_it(
    tmp_path_factory: pytest.TempPathFactory, name: str, items: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("globals")
    for template, source in GLOBALS_USED.items():
        (directory / template).write_text(source)
    library = PromptLibrary(directory)
    reference = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)), trim_blocks=True, lstrip_blocks=True
    )
    variables = {"name": name, "items": items}
    for template in ("own.j2", "block_global.j2", "macro_global.j2", "includes.j2", "imports.j2"):
        expected = reference.get_template(template).render(variables).strip()
        got = library.render(template, dict(variables))
        assert got == ([Message(role="user", content=expected)] if expected else [])
    shadowed = {**variables, "range": "R"}
    expected = reference.get_template("shadow.j2").render(shadowed).strip()
    assert library.render("shadow.j2", shadowed) == [Message(role="user", content=expected)]
