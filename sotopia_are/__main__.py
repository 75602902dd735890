"""`python -m sotopia_are` runs the command line."""

from sotopia_are.cli import main

main()
