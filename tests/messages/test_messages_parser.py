"""The script parser: the formats people write, and errors that point at the line."""

from pathlib import Path

import pytest

from sotopia_are.messages import (
    AgentAction,
    ScriptInteraction,
    ScriptParseError,
    parse_dialogue,
    parse_script,
    split_turns,
)

AB = ["Alice", "Bob"]


def pairs(text: str, names: list[str] = AB) -> list[tuple[str, str, str, list[str] | None]]:
    return [
        (a.speaker, a.action.action_type, a.action.argument, a.action.to)
        for a in parse_script(text, names)
    ]


def test_all_five_kinds() -> None:
    text = (
        'Turn #1\nAlice said: "Hi"\nTurn #2\nBob [action] waves\n'
        "Turn #3\nAlice [non-verbal communication] smiles\nTurn #4\nBob did nothing\n"
        "Turn #5\nAlice left the conversation\n"
    )
    assert pairs(text) == [
        ("Alice", "speak", "Hi", None),
        ("Bob", "action", "waves", None),
        ("Alice", "non-verbal communication", "smiles", None),
        ("Bob", "none", "", None),
        ("Alice", "leave", "", None),
    ]


def test_private_prefix_before_every_kind() -> None:
    names = ["Alice", "Bob", "Carol"]
    text = (
        "Alice [private to ['Bob', 'Carol']] said: \"psst\"\n"
        "Bob [private to ['Alice']] [action] slips a note\n"
        "Carol [private to ['Bob']] [non-verbal communication] winks\n"
        "Alice [private to ['Carol']] did nothing\n"
        "Bob [private to ['Carol']] left the conversation\n"
    )
    assert pairs(text, names) == [
        ("Alice", "speak", "psst", ["Bob", "Carol"]),
        ("Bob", "action", "slips a note", ["Alice"]),
        ("Carol", "non-verbal communication", "winks", ["Bob"]),
        ("Alice", "none", "", ["Carol"]),
        ("Bob", "leave", "", ["Carol"]),
    ]


def test_loose_private_recipients() -> None:
    names = ["Alice", "Bob", "Carol"]
    assert pairs("Alice [Private to Bob, Carol]: meet me at noon", names) == [
        ("Alice", "speak", "meet me at noon", ["Bob", "Carol"])
    ]


def test_names_with_punctuation_accents_and_prefixes() -> None:
    names = ["Ann", "Ann Lee-O'Neil", "Zoë d'Arc", "Ann Lee"]
    text = (
        'Ann Lee-O\'Neil said: "one"\nAnn said: "two"\nAnn Lee said: "three"\n'
        'Zoë d\'Arc [private to ["Ann Lee-O\'Neil"]] said: "four"\n'
    )
    assert pairs(text, names) == [
        ("Ann Lee-O'Neil", "speak", "one", None),
        ("Ann", "speak", "two", None),
        ("Ann Lee", "speak", "three", None),
        ("Zoë d'Arc", "speak", "four", ["Ann Lee-O'Neil"]),
    ]


def test_header_variants_and_layouts() -> None:
    text = (
        'Turn #1\nAlice said: "a"\n\n'
        'Turn 2:\nBob said: "b"\n'
        'Turn #3: Alice said: "c"\n'
        "turn 4 Bob [action] d\n"
        'Turn #5:\n\n  Alice said: "e"\n'
    )
    parsed = parse_script(text, AB)
    assert [(a.turn, a.speaker, a.action.argument) for a in parsed] == [
        (1, "Alice", "a"),
        (2, "Bob", "b"),
        (3, "Alice", "c"),
        (4, "Bob", "d"),
        (5, "Alice", "e"),
    ]
    assert [a.line for a in parsed] == [2, 5, 6, 7, 10]


def test_crlf_and_blank_lines() -> None:
    text = '\r\n\r\nTurn #1\r\nAlice said: "one\r\ntwo"\r\n\r\nTurn #2\r\nBob did nothing\r\n'
    assert pairs(text) == [("Alice", "speak", "one\ntwo", None), ("Bob", "none", "", None)]


def test_speech_with_quotes_and_several_lines() -> None:
    text = (
        'Turn #1\nAlice said: "She said "no", then "maybe"."\n'
        'Turn #2\nBob said: "First line\n\nThird line, ending in a quote"\n'
        'Turn #3\nAlice said: """\n'
    )
    assert pairs(text) == [
        ("Alice", "speak", 'She said "no", then "maybe".', None),
        ("Bob", "speak", "First line\n\nThird line, ending in a quote", None),
        ("Alice", "speak", '"', None),
    ]


def test_speech_containing_turn_lines_is_never_split() -> None:
    text = (
        'Turn #1\nAlice said: "Here is what we said before:\n'
        'Turn #0: Bob said: "hello"\n'
        'Turn #1: Alice said: "bye"\n'
        'Turn #2: none"\n'
        "Turn #2\nBob left the conversation\n"
    )
    assert pairs(text) == [
        (
            "Alice",
            "speak",
            'Here is what we said before:\nTurn #0: Bob said: "hello"\n'
            'Turn #1: Alice said: "bye"\nTurn #2: none',
            None,
        ),
        ("Bob", "leave", "", None),
    ]


def test_headerless_screenplay_and_quote_markers() -> None:
    text = (
        "Alice: Hello there\n"
        '> Bob said: "Hi"\n'
        "Bob: [action] sits down\n"
        'Alice: "Two\nlines"\n'
        "Bob: left the conversation\n"
    )
    parsed = parse_script(text, AB)
    assert [(a.speaker, a.action.action_type, a.action.argument) for a in parsed] == [
        ("Alice", "speak", "Hello there"),
        ("Bob", "speak", "Hi"),
        ("Bob", "action", "sits down"),
        ("Alice", "speak", "Two\nlines"),
        ("Bob", "leave", ""),
    ]
    assert all(a.turn is None for a in parsed)


def test_preamble_trailing_comma_and_empty_last_header() -> None:
    text = (
        "Prompt after formatting:\nHere is the context of this interaction:\n"
        "Scenario: Bob said nothing all day.\nParticipants: Alice and Bob\n"
        "Alice's goal: win\n"
        'Turn #0: Alice said: "x"\nTurn #1: Bob [action] shrugs.,\n'
    )
    assert pairs(text) == [("Alice", "speak", "x", None), ("Bob", "action", "shrugs.", None)]
    assert pairs('Turn #1\nAlice said: "x",\nTurn #2,') == [("Alice", "speak", "x", None)]
    assert pairs('Turn #0: Alice said: "x"\nTurn #1: ') == [("Alice", "speak", "x", None)]


def test_several_actions_under_one_header_and_many_participants() -> None:
    names = ["A1", "B2", "C3", "D4"]
    text = 'Turn #1\nA1 said: "a"\nB2 [action] b\nTurn #2\nC3 did nothing\nD4 said: "d"\n'
    assert [(a.turn, a.speaker) for a in parse_script(text, names)] == [
        (1, "A1"),
        (1, "B2"),
        (2, "C3"),
        (2, "D4"),
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('Turn #1\nAlice said: "hi"\nTurn #2\nEve said: "hi"\n', 4, "'Eve' is not a participant"),
        ('Turn #1\nAlice said: "hi"\nBob shouts loudly\n', 3, "cannot understand"),
        ('Alice said: "hi"\nEve: hello\n', 2, "'Eve' is not a participant"),
        ('Mallory said: "hi"\n', 1, "'Mallory' is not a participant"),
        ("Turn #1\nAlice [private to ['Eve']] said: \"x\"\n", 2, "unknown recipient 'Eve'"),
        ("Turn #1\nAlice [private to ['Alice']] said: \"x\"\n", 2, "themselves"),
        ('Turn #1\nAlice said: "never closed\nTurn #2\nBob did nothing\n', 2, "never closed"),
        ('Turn #1\nAlice [private to [oops]] said: "x"\n', 2, "cannot read the private"),
        ("Turn #1\nAlice said:\n", 2, "cannot understand"),
    ],
)
def test_errors_give_the_line_and_quote_it(text: str, line: int, fragment: str) -> None:
    with pytest.raises(ScriptParseError) as caught:
        parse_script(text, AB)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.line_number == line
    bad_line = text.split("\n")[line - 1].strip()
    assert str(error).startswith(f"line {line}: ")
    assert fragment in str(error)
    assert str(error).endswith(bad_line)


def test_no_actions_is_an_error() -> None:
    with pytest.raises(ScriptParseError, match="no actions found"):
        parse_script("Just a preamble.\n", AB)


def test_participant_list_is_checked() -> None:
    with pytest.raises(ValueError, match="at least two"):
        parse_script('Alice said: "x"', ["Alice"])
    with pytest.raises(ValueError, match="distinct"):
        parse_script('Alice said: "x"', ["Alice", "Alice"])


def test_broken_script_file() -> None:
    text = (Path(__file__).parent / "broken_script.txt").read_text(encoding="utf-8")
    with pytest.raises(ScriptParseError) as caught:
        parse_script(text, ["Mara Quinn", "Teo Alvarez"])
    assert caught.value.line_number == 4
    assert "'Teo Alvaraz' is not a participant" in str(caught.value)


def test_script_interaction_parse_has_sotopia_shape() -> None:
    script = ScriptInteraction(
        interactions='Turn #1\nAlice said: "Hello, Bob!"\nTurn #2\nBob did nothing'
    )
    results, agent_results = script.parse(AB, "the background")
    assert len(results) == 3
    first = results[0]
    assert [(s, r) for s, r, _ in first] == [("Environment", "Alice"), ("Environment", "Bob")]
    assert first[0][2].to_natural_language() == "\nthe background\nConversation Starts:\n"
    turn_one = results[1]
    assert turn_one[2] == (
        "Alice",
        "Environment",
        AgentAction(action_type="speak", argument="Hello, Bob!"),
    )
    assert turn_one[3] == (
        "Bob",
        "Environment",
        AgentAction(action_type="none", argument="did nothing"),
    )
    assert agent_results == [
        ("Alice", AgentAction(action_type="speak", argument="Hello, Bob!")),
        ("Bob", AgentAction(action_type="none", argument="")),
    ]


def test_parse_single_dialogue() -> None:
    script = ScriptInteraction(interactions="")
    assert script.parse_single_dialogue('Turn #3\nSophia James said: "Hi"') == {
        "turn": 3,
        "name": "Sophia James",
        "action": "speak",
        "argument": "Hi",
        "to": None,
    }
    found = script.parse_single_dialogue("Bo [private to ['Al']] [action] nods", ["Al", "Bo"])
    assert (found["name"], found["action"], found["to"]) == ("Bo", "action", ["Al"])
    assert parse_dialogue("Finnegan O'Malley left the conversation").speaker == "Finnegan O'Malley"
    with pytest.raises(ScriptParseError, match="single action"):
        parse_dialogue('Al said: "a"\nBo said: "b"')


def test_split_by_turn_keeps_quoted_turn_lines_inside() -> None:
    text = (
        'Context line\nTurn #1\nAlice said: "Before:\nTurn #0: Bob said: "x""\n'
        "Turn #2\nBob did nothing\n"
    )
    expected = [
        'Turn #1\nAlice said: "Before:\nTurn #0: Bob said: "x""',
        "Turn #2\nBob did nothing",
    ]
    assert ScriptInteraction(interactions="").split_by_turn(text) == expected
    assert split_turns(text, AB) == expected
    assert split_turns("Alice: hi\nBob: yo\n", AB) == ["Alice: hi", "Bob: yo"]


def test_default_value_for_return_type() -> None:
    results, agent_results = ScriptInteraction.default_value_for_return_type()
    assert [(s, r) for s, r, _ in results[0]] == [("Environment", "none"), ("Environment", "none")]
    assert (
        results[0][0][2].to_natural_language()
        == "\nEnvironment is the agent\nConversation Starts:\n"
    )
    assert agent_results == [("", AgentAction(action_type="none", argument=""))]


def test_screenplay_lines_before_the_first_header_are_context() -> None:
    text = (
        "Alice: a baker, 30\nBob: a customer\n\n"
        'Turn #1\nAlice said: "Fresh bread?"\nTurn #2\nBob: Two loaves, please.\n'
    )
    parsed = parse_script(text, AB)
    assert [(a.turn, a.speaker, a.action.argument, a.line) for a in parsed] == [
        (1, "Alice", "Fresh bread?", 5),
        (2, "Bob", "Two loaves, please.", 7),
    ]
    assert split_turns(text, AB) == [
        'Turn #1\nAlice said: "Fresh bread?"',
        "Turn #2\nBob: Two loaves, please.",
    ]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('Alice said: "hi"\nTurn #2\nBob said: "yo"\n', 1),
        ("Context\nAlice: a baker\nBob [action] waves\nTurn #1\nAlice did nothing\n", 3),
        ("Alice: left the conversation\nTurn #1\nBob did nothing\n", 1),
        ("Alice [private to ['Bob']]: psst\nTurn #1\nBob did nothing\n", 1),
    ],
)
def test_actions_before_the_first_header_are_an_error_not_a_guess(text: str, line: int) -> None:
    with pytest.raises(ScriptParseError, match="before the first turn header") as caught:
        parse_script(text, AB)
    assert caught.value.line_number == line
    assert str(caught.value).endswith(text.split("\n")[line - 1])


def test_typographic_quotes_delimit_speech() -> None:
    text = (
        "Alice said: \u201cHi, \u201cBob\u201d!\u201d\n"
        "Bob: \u201cTwo\nlines\u201d\n"
        'Alice said: "\u201cquoted\u201d"\n'
    )
    assert pairs(text) == [
        ("Alice", "speak", "Hi, \u201cBob\u201d!", None),
        ("Bob", "speak", "Two\nlines", None),
        ("Alice", "speak", "\u201cquoted\u201d", None),
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            'Alice said: "a" and smiled\nBob did nothing\n',
            "text after the closing '\"' of this speech: 'and smiled'",
        ),
        (
            "Alice said: \u201ca\u201d nods\n",
            "text after the closing '\u201d' of this speech: 'nods'",
        ),
        ('Alice said: "a and smiled\nBob did nothing\n', "never closed"),
        ('Turn #1: Alice said: "a\nTurn #2: Bob said: "b\nc"\nTurn #3\n', "never closed"),
    ],
)
def test_unclosed_speech_messages(text: str, fragment: str) -> None:
    with pytest.raises(ScriptParseError) as caught:
        parse_script(text, AB)
    assert caught.value.line_number == 1
    assert fragment in str(caught.value)


def test_duplicate_private_recipients_are_an_error_at_their_line() -> None:
    text = "Turn #1\nAlice [private to ['Bob', 'Bob']] said: \"x\"\n"
    for parse in (lambda: parse_script(text, AB), lambda: parse_dialogue(text)):
        with pytest.raises(ScriptParseError, match="'Bob' is listed twice") as caught:
            parse()
        assert caught.value.line_number == 2


def test_mixed_header_styles_and_line_endings_in_one_script() -> None:
    # A speech must not swallow the next turn because the first header was a bare one.
    text = (
        'Turn 1:\nAnn said: "One."\nTurn #2:\nBob said: "Two."\n\n'
        'Turn #3: Ann said: "Three."\r\nTurn 4\r\nBob said: "Four."\r\n'
        "turn 5 Ann [action] waves\rTurn #6\rBob did nothing\r"
    )
    parsed = parse_script(text, ["Ann", "Bob"])
    assert [(a.turn, a.speaker, a.action.argument) for a in parsed] == [
        (1, "Ann", "One."),
        (2, "Bob", "Two."),
        (3, "Ann", "Three."),
        (4, "Bob", "Four."),
        (5, "Ann", "waves"),
        (6, "Bob", ""),
    ]
    assert [a.line for a in parsed] == [2, 4, 6, 8, 9, 11]


def test_a_well_formed_later_turn_ends_speech_whatever_the_first_header() -> None:
    for first in ("Turn #1\nAlice said: ", "Turn #1: Alice said: "):
        text = first + '"a\nb"\nTurn #2: Bob said: "c"\nTurn #3\nAlice did nothing\n'
        assert pairs(text) == [
            ("Alice", "speak", "a\nb", None),
            ("Bob", "speak", "c", None),
            ("Alice", "none", "", None),
        ]


@pytest.mark.parametrize("tail", [",", ".", ";", " ,", ".,;  ", ""])
def test_colon_forms_with_trailing_punctuation(tail: str) -> None:
    names = ["Ann", "Bob"]
    text = (
        f"Ann: left the conversation{tail}\nBob: did nothing{tail}\n"
        f'Ann: "Hi"{tail}\nBob [private to Ann]: did nothing{tail}\n'
        f"Ann [private to Bob]: left the conversation{tail}\nBob: [action] waves{tail}\n"
        f'Ann: said: "Yes"{tail}\nBob left the conversation{tail}\n'
    )
    assert pairs(text, names) == [
        ("Ann", "leave", "", None),
        ("Bob", "none", "", None),
        ("Ann", "speak", "Hi", None),
        ("Bob", "none", "", ["Ann"]),
        ("Ann", "leave", "", ["Bob"]),
        ("Bob", "action", f"waves{tail}".strip(), None),
        ("Ann", "speak", "Yes", None),
        ("Bob", "leave", "", None),
    ]


def test_trailing_punctuation_after_a_quote_needs_the_colon_form() -> None:
    # `said: "…".` is Sotopia's own form, where only a stray `,` is an export artifact.
    with pytest.raises(ScriptParseError, match="text after the closing") as caught:
        parse_script('Alice said: "Hi".\nBob did nothing\n', AB)
    assert caught.value.line_number == 1


@pytest.mark.parametrize(
    ("text", "line", "opened"),
    [
        ('Turn #1\nAlice said: "hi\nBob said: "x"\nTurn #2\nAlice did nothing\n', 3, 2),
        ('Turn #1\nAlice said: "hi\nBob [action] waves "x"\n', 3, 2),
        ('Turn #1\nAlice said: "hi\nBob: "x"\n', 3, 2),
        ('Turn #3: Alice said: "x"\nTurn #3: Bob said: "y"\n', 2, 1),
    ],
)
def test_a_closing_line_that_reads_as_an_action_is_an_error_not_a_guess(
    text: str, line: int, opened: int
) -> None:
    # A missing quote and quoted text cannot be told apart here: the parser says so.
    with pytest.raises(ScriptParseError, match=f"opened on line {opened} but also reads") as err:
        parse_script(text, AB)
    assert err.value.line_number == line
    assert str(err.value).endswith(text.split("\n")[line - 1])


def test_speech_may_quote_actions_inside_it_and_unquoted_screenplay_at_its_end() -> None:
    # Quoted across: the lines are inside the quotes; `Name: text` is how speech quotes.
    text = 'Turn #1\nAlice said: "He wrote:\nBob said: "x"\nand left.\nBob: fine"\nTurn #2\n'
    assert pairs(text) == [
        ("Alice", "speak", 'He wrote:\nBob said: "x"\nand left.\nBob: fine', None)
    ]
