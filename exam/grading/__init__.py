"""Grading what was recorded: a stored cell as the graders' ``Reply`` (stored), the keys a grade is
kept under (keys), and recorded replies graded against a bank, calling nothing (recorded:
``exam grade``). Below both the pipeline (the runner grades as cells arrive) and the reports
(the re-grade)."""
