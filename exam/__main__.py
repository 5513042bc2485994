"""`python -m exam` is the `exam` command."""

from exam.cli import main

main()
