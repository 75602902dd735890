"""Apps: the stateful tools that events and agents call."""

__all__: list[str] = []
