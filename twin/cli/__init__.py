"""The ``twin`` command: one module per command family, :func:`main` the entry point."""

from twin.cli.entry import main

__all__ = ["main"]
