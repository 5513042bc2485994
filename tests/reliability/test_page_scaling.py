"""The pages a stored reply is shown on grow linearly with the reply (issue 33: a reply of
~70,000 hits took 197 s to open in the reply viewer and the question page).

Each family of hostile reply (a mark flood: one short pattern repeated; a long sentence
without punctuation; digit runs; the agent's own «» spans, closed or not) is stored at sizes
from 1,000 to 200,000 characters (``TEXT_CAP_CHARS``) and opened through the Flask test
client in the reply viewer, the question page and the scorecard. The time of the largest
over that of a size 16 times smaller (the best of a few views each) must stay far under
quadratic growth: tests/scaling.py.

What is measured is the pages, not grading (made linear on its own): the grader is replaced
by one that decides at once, with evidence shaped as the real one's (the sentence of the
first hit, marked «like this», which for a reply without punctuation is the whole reply).
"""

from __future__ import annotations

import random

import pytest

from exam.reports import answer_cache
from exam.reports import regrade as regrade_mod
from exam.web.app import create_app
from graders import CheckResult, Grade
from graders.grade import GRADER_VERSION
from tests.exam.conftest import History
from tests.scaling import best_time, linear_bound

TOKEN = "page-scaling-token-91b4"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIZES = (1_000, 12_500, 50_000, 200_000)
SMALL, LARGE = 12_500, 200_000  # 16x: linear ~16, quadratic ~256
CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 400)]


def flood(n: int, rng: random.Random) -> tuple[str, str]:
    return "9 折 " * (n // 4), "9 折"


def sentence(n: int, rng: random.Random) -> tuple[str, str]:
    """One sentence, no punctuation, the deciding words every ~40 characters."""
    parts = []
    while sum(map(len, parts)) < n:
        parts.append("".join(rng.choice(CJK) for _ in range(rng.randint(20, 60))) + "已出貨")
    return "".join(parts)[:n], "已出貨"


def digits(n: int, rng: random.Random) -> tuple[str, str]:
    return "".join(rng.choice("0123456789") for _ in range(n)), "42"


def own_quotes(n: int, rng: random.Random) -> tuple[str, str]:
    """The agent's own «» spans, each different: the evidence sentence holds them all, each a
    phrase to mark."""
    return " ".join(f"«w{i:06d}»" for i in range(n // 10)), "w000001"


def unclosed(n: int, rng: random.Random) -> tuple[str, str]:
    return "«a " * (n // 3), "a"


FAMILIES = {"flood": flood, "sentence": sentence, "digits": digits, "own_quotes": own_quotes,
            "unclosed": unclosed}
PAGES = {"reply": "/reply/1/Q-01/1", "question": "/question/A/Q-01",
         "scorecard": "/scorecard/A/v1"}


def at_once(phrase: str):
    """A grader that decides at once: the fact found, the forbidden phrase asserted, each
    with the sentence of the first hit as evidence (the whole reply: no punctuation)."""
    def grade(question, reply, budget=None):
        text = reply.text or ""
        i = text.find(phrase)
        marked = (text[:i] + "«" + phrase + "»" + text[i + len(phrase):]) if i >= 0 else text
        checks = (CheckResult("fact[0]", "pass", evidence=marked),
                  CheckResult("forbidden[0]", "fail", unexpected=(phrase,),
                              evidence="asserted: " + marked))
        return Grade(question.case_no, reply.run_status, "fail", checks, GRADER_VERSION)

    return grade


def _site(tmp_path, text: str):
    history = History(tmp_path)
    history.bank("A", [("Q-01", "c", "major")])
    history.run("A", "v1", {"Q-01": "f"}, texts={"Q-01": text})
    history.store.close()
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), "TESTING": True})
    return app.test_client()


@pytest.mark.parametrize("family", FAMILIES)
def test_pages_of_a_hostile_reply_grow_linearly_with_it(tmp_path, monkeypatch, family, table):
    rng = random.Random(family)
    clients, phrase = {}, ""
    for n in SIZES:
        text, phrase = FAMILIES[family](n, rng)
        clients[n] = _site(tmp_path / f"n{n}", text)
    monkeypatch.setattr(regrade_mod, "grade", at_once(phrase))
    for n, client in clients.items():  # graded once and kept: the views below read it
        for name, path in PAGES.items():
            resp = client.get(path, headers=AUTH)
            assert resp.status_code == 200, (family, n, name, resp.text[:300])
            assert "<mark>" in resp.text, (family, n, name)
    ratios = {}
    for name, path in PAGES.items():
        def view(client, path=path):
            answer_cache.clear()  # the scorecard built each time, not read back
            assert client.get(path, headers=AUTH).status_code == 200

        small = best_time(lambda: view(clients[SMALL]), repeats=3)
        large = best_time(lambda: view(clients[LARGE]), repeats=3)
        ratios[name] = large / max(small, 1e-6)
    bound = linear_bound(SMALL, LARGE)
    slow = {name: round(r) for name, r in ratios.items() if r >= bound}
    assert slow == {}, f"{family}: 16x the reply took {slow}x the time (bound {bound:.0f})"
    table("pages", f"a {family} reply of 12,500 and 200,000 characters in the reply viewer, "
          "question page and scorecard", len(PAGES),
          "time grew " + ", ".join(f"{n} {r:.0f}x" for n, r in ratios.items())
          + " for 16x the reply (linear)")
