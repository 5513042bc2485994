"""`exam share revoke | show | list`: a leaked share link revoked from the CLI, on both store
backends; what cannot be revoked is one line and exit 2, never a traceback."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from exam.app import create_app
from exam.cli.main import main
from exam.store import Store
from exam.web.share import make_link, make_token, secret_key

API_TOKEN = "cli-share-token-1"
KEY = secret_key(None, API_TOKEN)  # what the service signs with when EXAM_SECRET_KEY is unset


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(store_url):
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
    (["revoke", "--page", "scorecard W1"], {}, "--page: expected a page of the dashboard"),
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
