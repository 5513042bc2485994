"""Commands that run agents and then decide: `--settle` spends extra repeats on the undecided
questions (settle); `exam watch` asks the shipped version again (watch). Above both the
pipeline (running) and the reports (deciding)."""
