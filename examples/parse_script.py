"""Parse a human-written conversation script into structured actions.

Reads ``examples/scripts/flat_share_chores.txt`` (a headerless screenplay with a comment
preamble, colon forms and speech over two lines), prints each action, and renders the
actions back in the canonical form, which parses to the same actions. Run:
``python examples/parse_script.py``.
"""

from pathlib import Path

from sotopia_are.messages import ScriptParseError, parse_script, render_script

SCRIPT = Path(__file__).parent / "scripts" / "flat_share_chores.txt"
NAMES = ["Sam O'Neill", "Priya Raman"]


def main() -> None:
    actions = parse_script(SCRIPT.read_text(encoding="utf-8"), NAMES)
    for item in actions:
        private = f" (private to {item.action.to})" if item.action.to else ""
        print(
            f"line {item.line:>2}  {item.speaker:<12} {item.action.action_type:<25}"
            f" {item.action.argument!r}{private}"
        )
    canonical = render_script([(item.speaker, item.action) for item in actions])
    again = parse_script(canonical, NAMES)
    assert [(a.speaker, a.action) for a in again] == [(a.speaker, a.action) for a in actions]
    print(f"\n{len(actions)} actions; the canonical rendering parses back to the same ones:\n")
    print(canonical)
    try:
        parse_script('Turn #1\nMallory said: "hi"', NAMES)
    except ScriptParseError as error:
        print(f"\nan unknown speaker is an error that points at the line:\n{error}")


if __name__ == "__main__":
    main()
