"""Running an exam: the agent registry, pacing, one POST and its reading, runs and workers."""
