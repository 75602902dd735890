"""sotopia_are: multi-agent social simulation on a discrete-event kernel.

Importing the package is cheap: litellm, redis and the CLI libraries load only when the
layer that needs them is imported.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
