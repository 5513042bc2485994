"""Running an exam: the agent registry, pacing, one POST and its reading, runs and workers;
and what else talks to an agent's n8n: its usage figures and production failures captured
as draft questions (capture)."""
