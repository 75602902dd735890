"""`play_rule`: a stand-in that plays a study's episodes as if it were a model.

Agents get valid, varied actions — mostly speech, now and then a gesture, a private word
to another participant when the request allows one, and leaving near the end — and the
judge gets valid ratings that differ between participants and episodes. In a game turn
(a schema whose ``anyOf`` variants each name one ``move``) an agent makes one of the moves
offered: speech most of the time when it is offered (half the time in a negotiation, where
an offer or an accept is offered too); otherwise it accepts a standing offer half the time
it may, or makes another move — a vote or another target among the eligible ones, an offer
near the middle of its range — and passes only when nothing else is offered. So a batch of
games ends both ways: deals at varied prices and none, either side of a Werewolf game
winning. Everything is read from the request: its JSON schema (what is allowed) and its
prompt (who speaks, which turn). The choices are a hash of the request's messages and its
``seed`` (when it sends one), so a replayed study gets the same answers and requests that
differ only in their seed — the repeats of a seeded study — get different ones, as from a
model that samples. (Without a seed, games whose prompts read alike are played alike: the
two ways of dealing a buyer and a seller are all the bargaining games there are.)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .replies import ReplyLike, echo_rule, schema_instance

__all__ = ["LEAVE_FROM_TURN", "play_rule"]

LEAVE_FROM_TURN = 8
"""From this turn on, an agent that may leave leaves (so episodes end before their limit)."""

_LINES = (
    "I see what you mean, but let me put it another way.",
    "That works for me if we can settle the details today.",
    "Honestly, I was hoping for a little more than that.",
    "Fair enough. What would you need from me to agree?",
    "Let us meet halfway.",
)
_GESTURES = ("nods slowly", "leans back and folds their arms", "smiles")
_PRIVATE = "Between us: I can be more flexible than I said."
_PASSING = ("pass", "skip", "abstain", "wait")
_GAME_LINES = (
    "I have been watching closely, and something does not add up.",
    "Let us hear from everyone before we decide.",
    "I trust the quiet ones least.",
    "That is a fair point; I will keep it in mind.",
    "We should settle this soon.",
)
_DEAL_LINES = (
    "Let us find a number we can both live with.",
    "That is further apart than I hoped.",
    "I could move a little, if you do too.",
    "Tell me your best price.",
    "I am in no hurry; take your time.",
)
_SPEECH_PERCENT = 70
"""How often a game turn is speech when speech is among its moves (outside a negotiation)."""
_DEALING_SPEECH_PERCENT = 50
"""How often it is speech when an offer or an accept is also among them."""
_ACCEPT_PERCENT = 50
"""How often a turn that does not speak accepts a standing offer it may accept."""


def play_rule(request: Mapping[str, Any]) -> ReplyLike:
    """A valid answer to ``request``'s JSON schema, chosen to look like play (see the
    module); a request without a schema is echoed."""
    response_format = request.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return echo_rule(request)
    definitions = schema.get("$defs", {})
    properties = schema.get("properties", {})
    drawn = request.get("messages")
    if request.get("seed") is not None:
        drawn = [drawn, request["seed"]]
    seed = _digest(json.dumps(drawn, sort_keys=True))
    if "action_type" in properties:
        return json.dumps(_action(properties, definitions, _prompt(request), seed))
    moves = _move_variants(schema)
    if moves:
        return json.dumps(_game_move(moves, seed))
    return json.dumps(_ratings(schema, definitions, seed))


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _prompt(request: Mapping[str, Any]) -> str:
    return "\n".join(
        str(message.get("content", ""))
        for message in request.get("messages") or []
        if isinstance(message, Mapping)
    )


def _options(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> list[Any]:
    """The enum values of ``schema`` (through a ``$ref`` or the first of an ``anyOf``)."""
    if "$ref" in schema:
        return _options(definitions[str(schema["$ref"]).rsplit("/", 1)[-1]], definitions)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [o for part in schema[key] for o in _options(part, definitions)]
    if "items" in schema:
        return _options(schema["items"], definitions)
    return list(schema.get("enum", []))


def _action(
    properties: Mapping[str, Any], definitions: Mapping[str, Any], prompt: str, seed: int
) -> dict[str, Any]:
    kinds = _options(properties["action_type"], definitions)
    recipients = _options(properties["to"], definitions) if "to" in properties else []
    turn_found = re.search(r"This is turn (\d+)", prompt)
    turn = int(turn_found.group(1)) if turn_found else 0
    roll = seed % 10
    if "leave" in kinds and turn >= LEAVE_FROM_TURN:
        return {"action_type": "leave", "argument": ""}
    if "non-verbal communication" in kinds and roll < 2:
        return {"action_type": "non-verbal communication", "argument": _pick(_GESTURES, seed)}
    action: dict[str, Any] = {"action_type": "speak", "argument": _pick(_LINES, seed)}
    if "speak" not in kinds:
        return {"action_type": kinds[0], "argument": "" if kinds[0] in ("none", "leave") else "…"}
    if len(recipients) > 1 and roll == 2:
        action.update(argument=_PRIVATE, to=[_pick(recipients, seed)])
    return action


def _move_variants(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The variants of a game-move schema (each an object naming one ``move``), else []."""
    variants = schema.get("anyOf")
    if not isinstance(variants, list) or not variants:
        return []
    if all(isinstance(v, Mapping) and "move" in v.get("properties", {}) for v in variants):
        return variants
    return []


def _game_move(variants: Sequence[Mapping[str, Any]], seed: int) -> dict[str, Any]:
    def draw(what: str, options: Sequence[Any]) -> Any:
        return options[_digest(f"{seed}:{what}") % len(options)]

    def chance(what: str, percent: int) -> bool:
        return _digest(f"{seed}:{what}") % 100 < percent

    def name(variant: Mapping[str, Any]) -> str:
        return str(variant["properties"]["move"]["enum"][0])

    speech = [v for v in variants if "argument" in v.get("required", ())]
    aimed = [v for v in variants if {"target", "amount"} & set(v.get("required", ()))]
    plain = [v for v in variants if v not in speech and v not in aimed]
    # Passing keeps a game from moving on: only when nothing else is offered.
    passing = [v for v in plain if name(v).lower() in _PASSING]
    playing = aimed + [v for v in plain if v not in passing]
    accepting = [v for v in playing if "accept" in name(v).lower()]
    # In a negotiation (an offer or an accept among the moves) half the turns are offers
    # and answers: with speech as often as elsewhere, few games would reach a deal.
    dealing = bool(accepting) or any("amount" in v.get("required", ()) for v in playing)
    lines = _DEAL_LINES if dealing else _GAME_LINES
    speaking = _DEALING_SPEECH_PERCENT if dealing else _SPEECH_PERCENT
    if speech and (chance("speaks", speaking) or not playing):
        return {"move": name(draw("speech", speech)), "argument": draw("line", lines)}
    if not playing:
        return {"move": name(draw("pass", passing))}
    if accepting and chance("accepts", _ACCEPT_PERCENT):
        variant = draw("accept", accepting)
    else:
        variant = draw("move", [v for v in playing if v not in accepting] or playing)
    properties = variant["properties"]
    move: dict[str, Any] = {"move": name(variant)}
    if "target" in properties:
        move["target"] = draw("target", properties["target"]["enum"])
    if "amount" in properties:
        low, high = int(properties["amount"]["minimum"]), int(properties["amount"]["maximum"])
        middle, spread = (low + high) // 2, (high - low) // 5
        move["amount"] = middle - spread + _digest(f"{seed}:amount") % (2 * spread + 1)
    return move


def _pick(options: Sequence[Any], seed: int) -> Any:
    return options[(seed // 10) % len(options)]


def _ratings(schema: Mapping[str, Any], definitions: Mapping[str, Any], seed: int) -> Any:
    """A valid instance of ``schema`` whose integers vary with their place in it and with
    ``seed`` (so participants and episodes get different scores)."""

    def walk(node: Mapping[str, Any], path: str) -> Any:
        if "$ref" in node:
            return walk(definitions[str(node["$ref"]).rsplit("/", 1)[-1]], path)
        if node.get("type") == "object":
            properties = node.get("properties", {})
            return {
                name: walk(properties[name], f"{path}/{name}")
                for name in node.get("required", list(properties))
            }
        if node.get("type") == "integer" and "minimum" in node and "maximum" in node:
            low, high = int(node["minimum"]), int(node["maximum"])
            return low + _digest(f"{seed}{path}") % (high - low + 1)
        if node.get("type") == "string" and "enum" not in node:
            return f"A reasoning about {path.strip('/').replace('/', ', ')}."
        return schema_instance(node, definitions)

    return walk(schema, "")
