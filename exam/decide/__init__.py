"""Commands that run agents and then decide: `--settle` and `exam watch`."""
