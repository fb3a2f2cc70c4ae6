"""Subcommands of the ``dpgpu`` CLI, one module each (see :mod:`dpgpu.cli`)."""
