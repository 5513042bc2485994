"""`exam share revoke | show | list`: a leaked share link revoked from the CLI, on both store
backends; what cannot be revoked is one line and exit 2, never a traceback."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.share import make_link, make_token, secret_key
from exam.store import Store
from exam.web.app import create_app

API_TOKEN = "cli-share-token-1"
KEY = secret_key(None, API_TOKEN)  # what the service signs with when EXAM_SECRET_KEY is unset


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(store_url):
    """A store with runs of W1 v1, W1 v2 and W3 v2: the scorecard pages a link can open."""
    s = Store(store_url)
    try:
        for agent, version in (("W1", "v1"), ("W1", "v2"), ("W3", "v2")):
            s.create_run(agent=agent, version=version, bank_path=f"bank/{agent}.json",
                         bank_digest="b" * 64, repeats=1, plan=[(f"{agent}-01", "d1")],
                         settings={}, status="done")
    finally:
        s.close()
    return {"EXAM_DB": store_url, "EXAM_API_TOKEN": API_TOKEN}


def opens(store_url: str, token: str) -> int:
    """The status a browser gets opening the link on a service of this store."""
    app = create_app({"API_TOKEN": API_TOKEN, "DB": store_url, "TESTING": True})
    return app.test_client().get(f"/share/{token}").status_code


def test_a_pasted_link_is_revoked_on_the_service(env, store_url):
    link = make_link(KEY, "https://exam.example.com", "/scorecard/W2/v3")
    token = link.rsplit("/", 1)[1]
    assert opens(store_url, token) == 302
    done = invoke("share", "revoke", link, "--reason", "forwarded outside the group", env=env)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("revoked the share link to /scorecard/W2/v3 (id ")
    assert token not in done.output
    assert opens(store_url, token) == 403
    again = invoke("share", "revoke", token, env=env)  # the token alone, a second time
    assert again.exit_code == 0 and "was already revoked on " in again.output
    listed = invoke("share", "list", env=env)
    assert listed.exit_code == 0
    assert len(listed.output.splitlines()) == 1
    assert "/scorecard/W2/v3" in listed.output and "(forwarded outside the group)" in listed.output
    shown = invoke("share", "show", link, env=env)
    assert shown.exit_code == 0 and "revoked  yes, on " in shown.output


def test_every_link_to_a_page_made_until_now(env, store_url):
    before = make_token(KEY, "/scorecard/W1/v1", now=time.time() - 5)
    done = invoke("share", "revoke", "--page", "https://exam.example.com/scorecard/W1/v1",
                  env=env)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("revoked every share link to /scorecard/W1/v1 made before ")
    assert opens(store_url, before) == 403
    assert opens(store_url, make_token(KEY, "/scorecard/W1/v1")) == 302  # made since
    assert opens(store_url, make_token(KEY, "/scorecard/W1/v2", now=time.time() - 5)) == 302
    (row,) = json.loads(invoke("share", "list", "--format", "json", env=env).output)
    assert row["link"] is None and row["page"] == "/scorecard/W1/v1"


@pytest.mark.parametrize("page", [
    "/scorecard/W3/v2/", "/scorecard/w3/v2", "/scorecard/W3/V2", "/scorecard//W3/v2//",
    "https://exam.example.com/Scorecard/w3/v2/?tab=cost#top", "/scorecard/%57%33/v2",
])
def test_a_page_is_revoked_however_it_is_written(env, store_url, page):
    """A trailing slash, another letter case, a pasted address: the page the dashboard signs
    (/scorecard/W3/v2) is revoked, never a row that matches no link."""
    before = make_token(KEY, "/scorecard/W3/v2", now=time.time() - 5)
    done = invoke("share", "revoke", "--page", page, env=env)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("revoked every share link to /scorecard/W3/v2 made before ")
    assert opens(store_url, before) == 403


def test_a_page_spelled_two_ways_in_the_store_is_not_guessed(env, store_url):
    s = Store(store_url)
    try:
        s.create_run(agent="w3", version="v2", bank_path="bank/w3.json", bank_digest="b" * 64,
                     repeats=1, plan=[("w3-01", "d1")], settings={}, status="done")
    finally:
        s.close()
    done = invoke("share", "revoke", "--page", "/scorecard/W3/V2", env=env)
    assert done.exit_code == 2 and len(done.output.splitlines()) == 1, done.output
    assert "(it has /scorecard/W3/v2, /scorecard/w3/v2: give the one meant)" in done.output
    exact = invoke("share", "revoke", "--page", "/scorecard/w3/v2/", env=env)
    assert exact.exit_code == 0 and "link to /scorecard/w3/v2 made" in exact.output


def test_show_tells_links_apart_and_revokes_nothing(env, store_url):
    link = make_link(KEY, "https://exam.example.com", "/scorecard/W3/v2", days=2)
    shown = invoke("share", "show", link, env=env)
    assert shown.exit_code == 0
    assert shown.output.splitlines()[0] == "page     /scorecard/W3/v2"
    assert "revoked  no" in shown.output
    assert invoke("share", "list", env=env).output == "no share link is revoked\n"


@pytest.mark.parametrize(("args", "extra_env", "message"), [
    (["revoke", "hello there"], {}, "not a share link: expected PUBLIC_URL/share/<token>"),
    (["revoke", make_token("another key", "/scorecard/W1/v1")], {},
     "this share link is not valid (changed, or signed with another key): the link is not "
     "this service's, or this shell's EXAM_SECRET_KEY"),
    (["revoke", make_token(KEY, "/scorecard/W1/v1")[:-3] + "abc"], {},
     "this share link is not valid"),
    (["revoke", make_token(KEY, "/scorecard/W1/v1", now=time.time() - 8 * 86400)], {},
     "this share link expired on "),
    (["revoke", make_token(KEY, "/scorecard/W1/v1")], {"EXAM_API_TOKEN": ""},
     "EXAM_SECRET_KEY (or EXAM_API_TOKEN) is not set"),
    (["revoke"], {}, "give the share LINK to revoke (pasted whole, or its token), or --page"),
    (["revoke", make_token(KEY, "/x"), "--page", "/x"], {}, "LINK and --page: give one"),
    (["revoke", "--page", f"https://e.example/share/{make_token(KEY, '/x')}"], {},
     "--page: that is a share link, not a page"),
    (["revoke", "--page", "scorecard W1"], {}, "--page: expected a scorecard page"),
    (["revoke", "--page", "/compare/W1"], {}, "--page: expected a scorecard page"),
    (["revoke", "--page", "/scorecard/W9/v2"], {},
     "--page: no share link opens /scorecard/W9/v2: the store has no run of W9 v2"),
    (["revoke", "--page", "/scorecard/W3/v22/"], {}, "--page: no share link opens"),
    (["show", "https://exam.example.com/share/"], {}, "not a share link"),
])
def test_what_cannot_be_revoked_is_one_line_and_exit_2(env, store_url, args, extra_env, message):
    result = invoke("share", *args, env={**env, **extra_env})
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {message}"), result.output
    assert len(result.output.splitlines()) == 1 and "Traceback" not in result.output
    s = Store(store_url)
    try:
        assert s.all_share_revocations() == []
    finally:
        s.close()
