"""Test-wide settings: litellm must never reach for the network at import time."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
