"""The ``twin`` command: one module per command family, :mod:`twin.cli.main` the entry point."""
