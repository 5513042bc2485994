"""LINE pushes against a fake LINE API that the real SDK is pointed at."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from exam import notify
from exam.cli.main import main
from exam.notify import line
from exam.notify.line import CHANNEL, LineSettings, build_messages
from exam.notify.summary import Summary

SECRET_TOKEN = "line-access-token-SECRET-9f1c"


@pytest.fixture
def settings(fake_line):
    return LineSettings(access_token=SECRET_TOKEN, group_id="Cgroup123",
                        host=fake_line.host, public_url="https://exam.example.com")


def no_sleep(_s):
    return None


def notify_runs(store, settings, run_ids, **kw):
    return notify.notify_runs(store, CHANNEL, settings, run_ids, **kw)


def test_push_is_a_flex_carousel_with_change_and_link(regressed, settings, fake_line):
    history, run_id = regressed
    results = notify_runs(history.store, settings, [run_id], sleep=no_sleep)
    assert [r["status"] for r in results] == ["delivered"]
    (req,) = fake_line.pushes()
    assert req["headers"]["Authorization"] == f"Bearer {SECRET_TOKEN}"
    body = req["body"]
    assert body["to"] == "Cgroup123"
    flex = body["messages"][0]
    assert flex["type"] == "flex" and flex["contents"]["type"] == "carousel"
    text = json.dumps(flex, ensure_ascii=False)
    assert "W1 · v2" in text and "vs v1: 1 regression(s), 1 fix(es)" in text
    assert "✗ Q-01" in text and "CRITICAL failing: Q-01" in text
    assert "https://exam.example.com/scorecard/W1/v2" in text
    assert "pass 3 · needs_human 0 · fail 3" in flex["altText"]  # the plain-text fallback


def test_the_scorecard_button_is_a_signed_read_only_share_link(regressed, settings, fake_line):
    from dataclasses import replace

    from exam.share import read_token

    history, run_id = regressed
    signed = replace(settings, share_secret="service-secret-key")
    notify_runs(history.store, signed, [run_id], sleep=no_sleep)
    (req,) = fake_line.pushes()
    footer = req["body"]["messages"][0]["contents"]["contents"][0]["footer"]
    uri = footer["contents"][0]["action"]["uri"]
    assert uri.startswith("https://exam.example.com/share/")
    assert read_token("service-secret-key", uri.rsplit("/", 1)[1]).path == "/scorecard/W1/v2"
    assert "service-secret-key" not in json.dumps(req["body"])


def test_the_share_key_comes_from_the_services_settings():
    from exam.share import secret_key

    env = {"LINE_CHANNEL_ACCESS_TOKEN": "t", "LINE_GROUP_ID": "C1", "EXAM_API_TOKEN": "adm"}
    assert LineSettings.from_env(env).share_secret == secret_key(None, "adm")
    assert LineSettings.from_env({**env, "EXAM_SECRET_KEY": "k"}).share_secret == "k"
    assert LineSettings.from_env({"LINE_CHANNEL_ACCESS_TOKEN": "t",
                                  "LINE_GROUP_ID": "C1"}).share_secret is None


def test_the_review_queue_is_counted_in_replies_and_cells(regressed):
    from exam.notify.summary import Summary, summary_text

    text = summary_text(Summary(agent="W1", version="v2", passed=1, needs_human=3, fail=0,
                                pass_rate=0.25, not_answered=0, cost={}, review_queue=3,
                                review_replies=1))
    assert "review queue: 1 distinct reply in 3 cells waiting" in text


def test_500_then_success_reuses_the_retry_key(regressed, settings, fake_line):
    history, run_id = regressed
    fake_line.answer(500, 500, 200)
    results = notify_runs(history.store, settings, [run_id], sleep=no_sleep)
    assert results[0]["status"] == "delivered"
    keys = [r["headers"]["X-Line-Retry-Key"] for r in fake_line.pushes()]
    assert len(keys) == 3 and len(set(keys)) == 1
    stored = history.store.notifications()[0]
    assert stored["retry_key"] == keys[0] and stored["attempts"] == 3


def test_429_honours_retry_after(regressed, settings, fake_line):
    history, run_id = regressed
    waits = []
    fake_line.answer((429, {"Retry-After": "7"}, {"message": "Too many requests"}), 200)
    notify_runs(history.store, settings, [run_id], sleep=waits.append)
    assert waits == [7.0]


def test_409_means_already_accepted(regressed, settings, fake_line):
    history, run_id = regressed
    fake_line.answer(500, (409, {}, {"message": "The retry key is already accepted"}))
    results = notify_runs(history.store, settings, [run_id], sleep=no_sleep)
    assert results[0]["status"] == "delivered" and len(fake_line.pushes()) == 2


def test_400_is_reported_with_lines_message_not_retried_and_resendable(regressed, settings, fake_line):
    history, run_id = regressed
    fake_line.answer((400, {}, {"message": "The request body has 1 error(s)",
                                "details": [{"message": "must be specified", "property": "to"}]}))
    results = notify_runs(history.store, settings, [run_id], sleep=no_sleep)
    assert len(fake_line.pushes()) == 1
    assert results[0]["status"] == "failed"
    assert "LINE answered 400: The request body has 1 error(s) (to: must be specified)" in \
        results[0]["outcome"]
    # the results are untouched, and the notification can be sent again with the same key
    assert history.store.count_cells(run_id) == 6
    nid = results[0]["id"]
    again = notify.deliver(history.store, CHANNEL, settings, [nid], sleep=no_sleep)
    assert again[0]["status"] == "delivered"
    keys = {r["headers"]["X-Line-Retry-Key"] for r in fake_line.pushes()}
    assert len(keys) == 1


def test_sdk_does_not_retry_on_its_own(regressed, settings, fake_line):
    history, run_id = regressed
    fake_line.answer(503, 503, 503, 503)
    results = notify_runs(history.store, settings, [run_id], sleep=no_sleep)
    assert results[0]["status"] == "failed"
    assert len(fake_line.pushes()) == 4  # exactly our 4 attempts, no urllib3 retries stacked


def test_cannot_reach_line_is_recorded(regressed):
    history, run_id = regressed
    dead = LineSettings(access_token=SECRET_TOKEN, group_id="C1", host="http://127.0.0.1:9")
    results = notify_runs(history.store, dead, [run_id], sleep=no_sleep)
    assert results[0]["status"] == "failed" and "cannot reach LINE" in results[0]["outcome"]


def _summary(i: int, regressions: int = 0) -> Summary:
    cost = {k: {"p50": 2.0, "p95": 3.0, "total": 10.0}
            for k in ("attempts", "model_calls", "tokens", "latency_ms")}
    return Summary(agent=f"W{i}", version="v2", passed=18, needs_human=1, fail=1,
                   pass_rate=0.9, not_answered=0, cost=cost, previous="v1",
                   regressions=tuple(f"W{i}-{n:03d}" for n in range(regressions)))


def test_more_than_12_bubbles_are_split_into_carousels():
    messages = build_messages([_summary(i) for i in range(13)])
    assert [len(m["contents"]["contents"]) for m in messages] == [12, 1]
    assert all(len(m["altText"]) <= line.MAX_ALT_TEXT for m in messages)


def test_carousel_over_50kb_is_split(monkeypatch):
    monkeypatch.setattr(line, "SHOW_REGRESSIONS", 400)
    messages = build_messages([_summary(i, regressions=400) for i in range(6)])
    assert len(messages) > 1
    for m in messages:
        assert line._size(m["contents"]) <= line.MAX_CAROUSEL_BYTES
        for b in m["contents"]["contents"]:
            assert line._size(b) <= line.MAX_BUBBLE_BYTES


def test_regressions_beyond_the_first_few_are_counted():
    (message,) = build_messages([_summary(1, regressions=9)])
    text = json.dumps(message, ensure_ascii=False)
    assert "✗ W1-002" in text and "✗ W1-003" not in text and "… and 6 more" in text


def test_more_than_five_messages_become_several_pushes():
    messages = build_messages([_summary(i) for i in range(70)])
    assert len(messages) == 6
    assert [len(p) for p in line.pushes(messages)] == [5, 1]


def test_text_is_split_within_5000_characters():
    chunks = line.text_messages("行\n" * 6000)
    assert all(len(c["text"]) <= 5000 for c in chunks) and len(chunks) == 3


def test_cli_notify_and_token_never_stored(regressed, fake_line, monkeypatch):
    history, run_id = regressed
    monkeypatch.setenv("LINE_CHANNEL_ACCESS_TOKEN", SECRET_TOKEN)
    monkeypatch.setenv("LINE_GROUP_ID", "Cgroup123")
    monkeypatch.setenv("LINE_API_HOST", fake_line.host)
    db = str(history.tmp / "exam.db")
    result = CliRunner().invoke(main, ["notify", "line", "--run", str(run_id), "--db", db],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(fake_line.pushes()) == 1
    assert SECRET_TOKEN not in result.output
    raw = b"".join(p.read_bytes() for p in history.tmp.glob("exam.db*"))
    assert SECRET_TOKEN.encode() not in raw


def test_cli_notify_without_settings_is_a_clear_error(regressed):
    history, run_id = regressed
    result = CliRunner().invoke(main, ["notify", "line", "--run", str(run_id), "--db",
                                       str(history.tmp / "exam.db")])
    assert result.exit_code == 2
    assert "LINE_CHANNEL_ACCESS_TOKEN and LINE_GROUP_ID not set" in result.output


# -- a long verdict reason ------------------------------------------------------------------

FIRST = "pending: 14 needs_human cell(s) in W1-001, W1-004, W1-007 decide it: run exam review"
LONG_REASON = (FIRST + "; also the ship rests on a rubric changed since v1 ran: "
               + ", ".join(f"W1-{n:03d}" for n in range(10, 40))
               + "; rubric changed since v1 ran: W1-010 expect_facts ['備貨中'] → ['備貨'] "
                 "(looser), W1-011 budget.tokens 1500 → 6000 (looser)")


def _verdict(i: int, reason: str, verdict: str = "pending") -> Summary:
    from dataclasses import replace

    return replace(_summary(i), verdict=verdict, verdict_reason=reason)


def _bubble_texts(b: dict) -> list[str]:
    return [c["text"] for c in b["body"]["contents"] if c.get("type") == "text"]


def _units(text: str) -> int:
    """LINE counts characters in UTF-16 code units (developers.line.biz, "Character counting
    in a text")."""
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize("link", [None, "https://exam.example.com/scorecard/W1/v2"])
def test_a_long_verdict_reason_keeps_its_first_clause_and_says_where_the_rest_is(link):
    b = line.bubble(_verdict(1, LONG_REASON), link)
    (shown,) = [t for t in _bubble_texts(b) if t.startswith("pending:")]
    kept, _, pointer = shown.partition("…")
    assert kept.startswith(FIRST) and LONG_REASON.startswith(kept)  # whole clauses, no half word
    assert LONG_REASON[len(kept):].startswith("; ")
    assert "exam compare W1 v1 v2" in pointer  # the whole reason, where a person can read it
    assert len(shown) <= 300
    assert ("footer" in b) == bool(link)


def test_a_reason_whose_first_clause_is_too_long_is_cut_between_items():
    hold = "hold: " + ", ".join(f"W1-{n:03d} 3/3 → 0/3 (q = 0.01)" for n in range(30))
    (shown,) = [t for t in _bubble_texts(line.bubble(_verdict(1, hold, "hold"), None))
                if t.startswith("hold:")]
    kept = shown.partition("…")[0]
    assert hold.startswith(kept) and hold[len(kept):].startswith(", ")
    assert kept.endswith("(q = 0.01)") and len(shown) <= 300


def test_a_short_reason_is_shown_whole():
    (shown,) = [t for t in _bubble_texts(line.bubble(_verdict(1, FIRST), None))
                if t.startswith("pending:")]
    assert shown == FIRST


def test_the_alt_text_keeps_every_agents_head_and_reasons_first_clause():
    summaries = [_verdict(i, LONG_REASON) for i in range(1, 5)]
    (message,) = build_messages(summaries)
    alt = message["altText"]
    assert _units(alt) <= line.MAX_ALT_TEXT
    for i in range(1, 5):
        assert f"W{i} v2: pass 18" in alt
    assert alt.count(FIRST) == 4 and "exam compare W4 v1 v2" in alt


def test_the_alt_text_limit_is_counted_as_line_counts_it():
    # 🍎 is one character in Python and two in LINE's count
    summaries = [_verdict(i, "pending: " + "🍎 " * 400) for i in range(1, 3)]
    (message,) = build_messages(summaries)
    assert _units(message["altText"]) <= line.MAX_ALT_TEXT


@pytest.mark.parametrize("reason", [LONG_REASON[:LONG_REASON.index(", W1-020")], LONG_REASON],
                         ids=["shorter-than-the-pointer", "long"])
def test_a_reason_is_never_given_up_for_a_pointer_that_does_not_fit(reason):
    """Agent and version names may be 64 characters each: the pointer to the whole reason
    ("the whole reason: exam compare AGENT OLD NEW") is then longer than the altText's
    160-character cut, and longer than a reason a little over it. The reason's head is what
    says why: it is kept, the pointer left out, and the cut stays within its limit."""
    from exam.notify.summary import clip

    rest = "the whole reason: exam compare " + " ".join(["a" * 64, "v" * 64, "w" * 64])
    cut = clip(reason, 160, rest)
    assert _units(cut) <= 160
    kept = cut.removesuffix("…")
    assert kept != cut and kept and reason.startswith(kept)
    assert reason[len(kept):].startswith(("; ", ", ", " "))  # between clauses, items or words


# a verdict's reason in Chinese: a first sentence, then a second one of clauses and items
CJK_REASON = ("擱置：W1-003 由 3/3 降為 0/3。" + "另有" + "、".join(f"W1-{n:03d}" for n in range(4, 12))
              + "略有退步，" + "其中" + "、".join(f"W1-{n:03d}" for n in range(12, 30)) + "待人審閱。")


@pytest.mark.parametrize("mark", ["。", "！", "？"])
def test_a_chinese_reason_is_cut_after_its_first_sentence_its_full_stop_kept(mark):
    """A sentence end is preferred over a clause or item break further on (the first sentence
    says why), and its mark stays before the "…": the sentence reads as ended."""
    from exam.notify.summary import clip

    reason = CJK_REASON.replace("。", mark, 1)
    first = reason[:reason.index(mark) + 1]
    assert clip(reason, 120) == first + "…"
    assert clip(reason, 120, "全文：exam compare W1 v1 v2") == \
        first + "… (全文：exam compare W1 v1 v2)"


def test_an_english_reason_is_cut_after_a_sentence_ending_in_an_exclamation_or_question():
    from exam.notify.summary import clip

    reason = "hold: W1-003 went from 3/3 to 0/3! " + ", ".join(f"W1-{n:03d}" for n in range(30))
    assert clip(reason, 100) == "hold: W1-003 went from 3/3 to 0/3!…"


@pytest.mark.parametrize("limit", range(8, 80))
def test_a_cut_after_a_sentence_stays_within_its_limit(limit):
    """The kept mark counts against the limit: a full stop just past the room is not kept
    (the cut falls back to an earlier break)."""
    from exam.notify.summary import clip

    for reason in (CJK_REASON, CJK_REASON.replace("。", "！"), "a? b! " * 20):
        cut = clip(reason, limit)
        assert _units(cut) <= limit
        assert reason.startswith(cut.removesuffix("…"))
