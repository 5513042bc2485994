"""`python -m exam` is the `exam` command."""

from exam.cli.main import main

main()
