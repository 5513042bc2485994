"""The webhook channel against a real receiver on 127.0.0.1: what is POSTed, retries with one
idempotency key, failures recorded and resent, and the URL's token kept out of everything."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner

from exam import notify
from exam.cli.main import main
from exam.notify import webhook
from exam.share import read_token
from tests.exam.helpers import accepted_tokens
from tests.fakes.server import send_json, serve

TOKEN = "q-token-5e6f7a8b"  # in the URL's query
PASSWORD = "pw-1a2b3c4d5e"  # in the URL's userinfo
AUTH = "Bearer auth-9f8e7d6c5b"  # EXAM_WEBHOOK_AUTH
SECRETS = (TOKEN, PASSWORD, "auth-9f8e7d6c5b")
pytestmark = pytest.mark.usefixtures("notifications_made_together")  # tests/exam/conftest.py


class Receiver:
    """Records every POST (its JSON, and its bytes as sent); answers from a script of
    (status, headers, body), then 200."""

    def __init__(self):
        self.posts: list[dict] = []
        self.script: list[tuple[int, dict, object]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.posts.append({"path": self.path, "headers": dict(self.headers),
                                           "body": json.loads(raw), "raw": raw})
                    status, headers, answer = (receiver.script.pop(0) if receiver.script
                                               else (200, {}, {"ok": True}))
                send_json(self, status, answer, headers)

        self.served = serve(Handler)
        base = self.served.url.replace("http://", f"http://team:{PASSWORD}@")
        self.url = f"{base}/hooks/exam?token={TOKEN}"
        self.safe_url = f"{self.served.url}/hooks/exam"

    def __enter__(self) -> Receiver:
        self.served.start()
        return self

    def __exit__(self, *exc) -> None:
        self.served.close()


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


@pytest.fixture
def env(receiver):
    return {"EXAM_WEBHOOK_URL": receiver.url, "EXAM_WEBHOOK_AUTH": AUTH,
            "EXAM_PUBLIC_URL": "https://exam.example.com", "EXAM_SECRET_KEY": "k" * 32}

def exam(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def store_bytes(path: str) -> str:
    return "".join(Path(p).read_bytes().decode("latin-1")
                   for p in (path, path + "-wal") if Path(p).exists())


def test_exam_notify_webhook_posts_the_summaries_as_json(regressed, receiver, env):
    history, run_id = regressed
    result = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path, env=env)
    assert result.exit_code == 0, result.output
    assert "Webhook notification 1: delivered in 1 attempt(s)" in result.output
    (post,) = receiver.posts
    assert post["path"] == f"/hooks/exam?token={TOKEN}"  # the URL as given, token and all
    assert post["headers"]["Authorization"] == AUTH
    assert post["headers"]["Content-Type"] == "application/json"
    (summary,) = post["body"]["summaries"]
    assert (summary["agent"], summary["version"], summary["previous"], summary["verdict"]) == \
        ("W1", "v2", "v1", "hold")
    assert (summary["pass"], summary["fail"], summary["regressions"], summary["fixes"]) == \
        (3, 3, ["Q-01"], ["Q-02"])
    assert summary["scorecard_link"].startswith("https://exam.example.com/share/")
    token = summary["scorecard_link"].rsplit("/", 1)[1]
    assert read_token(env["EXAM_SECRET_KEY"], token).path == "/scorecard/W1/v2"
    assert post["body"]["text"].startswith("W1 v2: pass 3 · needs_human 0 · fail 3")
    (n,) = history.store.notifications()
    # stored as POSTed, but for the share link: the page it opens, made a link as it is sent
    stored = json.loads(json.dumps(post["body"]))
    stored["summaries"][0]["scorecard_link"] = \
        "agent-exam-share-link:https://exam.example.com#/scorecard/W1/v2"
    assert (n["channel"], n["target"], n["status"], n["payload"]) == \
        ("webhook", receiver.safe_url, "delivered", stored)
    assert post["headers"]["Idempotency-Key"] == n["retry_key"]
    history.store.close()
    assert_no_secret(result.output, json.dumps(n), store_bytes(history.store.path))


def test_trouble_is_retried_with_one_idempotency_key(regressed, receiver, env):
    history, run_id = regressed
    receiver.script = [(500, {}, {}), (429, {"Retry-After": "7"}, {}), (503, {}, {})]
    waits = []
    channel = notify.get("webhook")
    (result,) = notify.notify_runs(history.store, channel, channel.settings(env), [run_id],
                                   sleep=waits.append)
    assert result["status"] == "delivered" and result["outcome"] == "delivered in 4 attempt(s)"
    keys = {p["headers"]["Idempotency-Key"] for p in receiver.posts}
    assert len(receiver.posts) == 4 and keys == {history.store.notifications()[0]["retry_key"]}
    assert waits == [0.5, 7.0, 2.0]  # doubling, except where the receiver said Retry-After
    # the share link is made once per send: every try carries the same body
    assert all(p["body"] == receiver.posts[0]["body"] for p in receiver.posts)


def test_a_refusal_is_not_retried_is_recorded_redacted_and_resent_with_its_key(
        regressed, receiver, env):
    history, run_id = regressed
    receiver.script = [(400, {}, {"error": f"bad token {TOKEN} for team:{PASSWORD}"})]
    failed = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path, env=env)
    assert failed.exit_code == 1 and len(receiver.posts) == 1
    assert "the webhook answered 400: " in failed.output and "[redacted]" in failed.output
    assert "resend with: exam notify webhook --resend 1" in failed.output
    (n,) = history.store.notifications()
    assert n["status"] == "failed" and n["last_error"].startswith("the webhook answered 400")
    assert_no_secret(failed.output, json.dumps(n))
    again = exam("notify", "webhook", "--resend", "1", "--db", history.store.path, env=env)
    assert again.exit_code == 0, again.output
    assert [p["headers"]["Idempotency-Key"] for p in receiver.posts] == [n["retry_key"]] * 2
    assert history.store.notifications()[0]["status"] == "delivered"


def test_a_receiver_that_cannot_be_reached_is_a_recorded_failure(regressed, env):
    history, run_id = regressed
    with Receiver() as gone:
        url = gone.url
    channel = notify.get("webhook")
    (result,) = notify.notify_runs(history.store, channel,
                                   channel.settings({**env, "EXAM_WEBHOOK_URL": url}), [run_id],
                                   sleep=lambda _s: None)
    assert result["status"] == "failed"
    assert result["outcome"] == "cannot reach the webhook: ConnectionError"
    assert history.store.notifications()[0]["attempts"] == 1  # recorded as one failed send
    assert_no_secret(json.dumps(history.store.notifications()))


@pytest.mark.parametrize("settings,message", [
    ({}, "EXAM_WEBHOOK_URL not set: the URL the summaries are POSTed to (docs/webhook.md)"),
    ({"EXAM_WEBHOOK_URL": f"ftp://team:{PASSWORD}@example.com/x?token={TOKEN}"},
     "EXAM_WEBHOOK_URL: expected an http(s) URL, found 'ftp://example.com/x'"),
])
def test_missing_or_bad_settings_are_bad_input(regressed, receiver, settings, message):
    history, run_id = regressed
    result = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path,
                  env={"EXAM_WEBHOOK_URL": "", **settings})
    assert result.exit_code == 2 and message in result.output
    assert_no_secret(result.output)
    assert receiver.posts == [] and history.store.notifications() == []


def test_a_dry_run_that_cannot_write_its_preview_says_so_in_one_line(regressed, receiver,
                                                                      tmp_path):
    """`exam notify … --dry-run` from a folder the service user may not write (its default
    --out is relative) is a message naming --out, not a traceback."""
    history, run_id = regressed
    not_a_folder = tmp_path / "results"
    not_a_folder.write_text("a file where the folder would go", encoding="utf-8")
    out = not_a_folder / "preview.json"
    result = exam("notify", "webhook", "--run", str(run_id), "--dry-run", "--out", str(out),
                  "--db", history.store.path, env={"EXAM_WEBHOOK_URL": ""})
    assert result.exit_code == 2, result.output
    assert f"--out {out}: cannot write the preview" in result.output
    assert "Traceback" not in result.output and "nothing sent" not in result.output
    assert receiver.posts == [] and history.store.notifications() == []


def test_a_dry_run_posts_nothing_and_writes_the_json(regressed, receiver, tmp_path):
    history, run_id = regressed
    out = tmp_path / "preview.json"
    result = exam("notify", "webhook", "--run", str(run_id), "--dry-run", "--out", str(out),
                  "--db", history.store.path, env={"EXAM_WEBHOOK_URL": ""})
    assert result.exit_code == 0, result.output
    assert "W1 v2: pass 3 · needs_human 0 · fail 3" in result.output
    assert f"1 POST(s), nothing sent; the JSON is in {out}" in result.output
    (payload,) = json.loads(out.read_text(encoding="utf-8"))
    assert payload["summaries"][0]["agent"] == "W1"
    assert receiver.posts == [] and history.store.notifications() == []


def test_a_dry_run_writes_the_plain_page_not_a_share_link(regressed, tmp_path, env):
    history, run_id = regressed
    out = tmp_path / "results" / "webhook-preview.json"
    result = exam("notify", "webhook", "--run", str(run_id), "--dry-run", "--out", str(out),
                  "--db", history.store.path, env=env)
    assert result.exit_code == 0, result.output
    written = out.read_text(encoding="utf-8")
    assert accepted_tokens(written, env["EXAM_SECRET_KEY"]) == []
    (payload,) = json.loads(written)
    assert payload["summaries"][0]["scorecard_link"] == "https://exam.example.com/scorecard/W1/v2"
    assert "a send carries a share link made as it is sent, working 7 days" in result.output


def test_a_case_number_that_looks_like_a_link_marker_is_sent_as_the_banks_text(
        history, receiver, env):
    """The summaries carry case numbers as the bank writes them: one spelled as a share
    link's marker, pointing at another host, is never signed into a link (which would hand
    a working token to that host); only ``scorecard_link`` is."""
    crafted = "agent-exam-share-link:https://evil.example#/scorecard/W1/v2"
    history.bank("W1", [(crafted, "c", "critical")])
    history.run("W1", "v1", {crafted: "ppp"})
    run_id = history.run("W1", "v2", {crafted: "fff"})
    result = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path, env=env)
    assert result.exit_code == 0, result.output
    (summary,) = receiver.posts[0]["body"]["summaries"]
    assert summary["regressions"] == [crafted] and summary["critical"] == [crafted]
    key = env["EXAM_SECRET_KEY"]
    assert accepted_tokens(json.dumps(summary["scorecard_link"]), key)  # the one link
    assert accepted_tokens(json.dumps({k: v for k, v in summary.items()
                                       if k != "scorecard_link"}), key) == []


class Echoing(Receiver):
    """Refuses every POST with a 400 that quotes the summary's link back, as a receiver
    validating the body may ("invalid scorecard_link: https://…/share/…")."""

    def __init__(self, pad: int = 0):
        super().__init__()
        self.script = None  # unused: every answer is the echo
        self.links: list[str] = []
        echoing = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                link = body["summaries"][0]["scorecard_link"]
                echoing.links.append(link)
                send_json(self, 400, {"error": f"{'.' * pad}invalid scorecard_link: {link}"})

        self.served.close()
        self.served = serve(Handler)
        self.url = f"{self.served.url}/hooks/exam"


def test_a_refusal_quoting_the_share_link_keeps_it_out_of_the_store_and_the_output(
        regressed, env):
    """The receiver's answer goes into the failure's message, which is printed and stored
    (``last_error``): the share link it quotes back is redacted from both, as the URL's token
    is, so the store still holds no link that opens a page."""
    history, run_id = regressed
    with Echoing() as echoing:
        result = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path,
                      env={**env, "EXAM_WEBHOOK_URL": echoing.url})
    assert result.exit_code == 1, result.output
    assert "the webhook answered 400: " in result.output
    assert "invalid scorecard_link: https://exam.example.com/share/[redacted]" in result.output
    (n,) = history.store.notifications()
    key = env["EXAM_SECRET_KEY"]
    assert accepted_tokens(result.output, key) == []
    assert accepted_tokens(json.dumps(n), key) == []
    history.store.close()
    assert accepted_tokens(store_bytes(history.store.path), key) == []


def test_a_share_link_quoted_across_the_cut_of_the_answer_leaves_no_part_of_it(regressed, env):
    """The failure's message keeps the first DETAIL_CHARS of the answer: a link quoted across
    that cut is redacted before it, so not even its head (signed path, times) is kept."""
    history, run_id = regressed
    with Echoing(pad=webhook.DETAIL_CHARS - 85) as echoing:
        result = exam("notify", "webhook", "--run", str(run_id), "--db", history.store.path,
                      env={**env, "EXAM_WEBHOOK_URL": echoing.url})
    assert result.exit_code == 1, result.output
    token = echoing.links[0].rsplit("/share/", 1)[1]
    assert len(token) > 60  # the link runs past the cut
    (n,) = history.store.notifications()
    for text in (result.output, json.dumps(n, ensure_ascii=False)):
        assert "/share/[redacted]" in text
        assert token[:12] not in text
    history.store.close()
