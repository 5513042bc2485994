"""The review queue is counted the same way everywhere: distinct replies and the cells that
returned them (CLI scorecard, `exam review`, LINE, dashboard)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from exam.cli.main import main
from exam.notify.summary import summaries_for, summary_text
from exam.web.app import create_app

WORDS = re.compile(r"review queue: (\d+ distinct repl(?:y|ies) in \d+ cells?) waiting")


def test_every_surface_says_one_reply_in_three_cells(history):
    history.bank("A", [("Q-01", "c", "major"), ("Q-02", "c", "major")])
    run_id = history.run("A", "v1", {"Q-01": "hhh", "Q-02": "ppp"})  # one reply, three cells
    db = str(history.tmp / "exam.db")

    cli = CliRunner().invoke(main, ["report", "scorecard", "--db", db])
    assert "review: 1 distinct reply in 3 cells waiting" in cli.output

    review = CliRunner().invoke(main, ["review", "--db", db, "--reviewer", "Mei"], input="q\n")
    assert WORDS.search(review.output).group(1) == "1 distinct reply in 3 cells"

    (summary,) = summaries_for(history.store, [run_id])
    assert WORDS.search(summary_text(summary)).group(1) == "1 distinct reply in 3 cells"

    app = create_app({"API_TOKEN": "t", "DB": db, "TESTING": True})
    page = app.test_client().get("/review", headers={"Authorization": "Bearer t"}).text
    assert WORDS.search(page).group(1) == "1 distinct reply in 3 cells"
    card = app.test_client().get("/scorecard/A/v1", headers={"Authorization": "Bearer t"}).text
    assert WORDS.search(card).group(1) == "1 distinct reply in 3 cells"
