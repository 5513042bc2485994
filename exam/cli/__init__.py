"""The ``exam`` command: one module per command family, assembled in ``exam.cli.main``."""
