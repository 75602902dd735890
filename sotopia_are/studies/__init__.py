"""What a study does, as library verbs: run and rate episodes, specs from profiles.

The command line is a thin wrapper over these; a Python script uses them directly (see
``import sotopia_are as sa``).
"""

from .profiles import agent_background, spec_from_profiles, spec_from_stored_profiles
from .rating import arate, arate_script, rate, rate_script, script_record
from .running import arun, mark_stopped, run

__all__ = [
    "agent_background",
    "arate",
    "arate_script",
    "arun",
    "mark_stopped",
    "rate",
    "rate_script",
    "run",
    "script_record",
    "spec_from_profiles",
    "spec_from_stored_profiles",
]
