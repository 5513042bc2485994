"""Commands that run agents and then decide: `--settle` spends extra repeats on the undecided
questions (settle). Above both the pipeline (running) and the reports (deciding)."""
