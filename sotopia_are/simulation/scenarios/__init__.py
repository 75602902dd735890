"""Scenarios: apps plus the events that drive them."""

__all__: list[str] = []
