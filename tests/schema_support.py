"""What a JSON schema sent to a model holds: its free texts (for the tests of their bounds)."""

from typing import Any


def free_texts(schema: Any) -> list[dict[str, Any]]:
    """Every ``{"type": "string"}`` schema in ``schema`` that is not an enum, in order."""
    if isinstance(schema, list):
        return [text for value in schema for text in free_texts(value)]
    if not isinstance(schema, dict):
        return []
    own = [schema] if schema.get("type") == "string" and "enum" not in schema else []
    return own + [text for value in schema.values() for text in free_texts(value)]
