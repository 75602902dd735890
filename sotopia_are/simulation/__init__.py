"""The event kernel: Meta ARE's Environment API on a deterministic, step-able core.

Import from the submodules (``environment``, ``types``, ``time_manager``,
``notification_system``, ``apps.app``, ``scenarios.scenario``), as with ``are.simulation``.
"""

__all__: list[str] = []
