"""The README's tour, run as written against `exam demo --serve`: every command works on the
demo data with nothing else to set up."""

from __future__ import annotations

import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import requests

from tests.conftest import ROOT
from tests.exam.helpers import sigint_reaches_children
from tests.processes import free_port

README = (ROOT / "README.md").read_text(encoding="utf-8")


def tour_commands() -> list[str]:
    """The `exam …` lines of the README's tour blocks, comments dropped."""
    tour = README[README.index("## A short tour"):README.index("## Docs")]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", tour, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["exam"] and "--serve" not in words:
                lines.append(shlex.join(words))
    return lines


def test_the_tour_lists_the_commands_a_newcomer_needs():
    cmds = " ".join(tour_commands())
    for needed in ("exam bank check", "exam grade", "exam agents check", "exam run", "exam runs",
                   "exam resume", "exam report scorecard", "exam compare", "exam review",
                   "exam notify line"):
        assert needed in cmds


def test_every_tour_command_runs_as_written_on_the_demo(tmp_path):
    (tmp_path / "bank").symlink_to(ROOT / "bank")
    (tmp_path / "docs").symlink_to(ROOT / "docs")
    port = free_port()
    exam = [sys.executable, "-m", "exam"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXAM_", "LINE_"))}
    with sigint_reaches_children():  # it is stopped with Ctrl-C below
        # the demo agents think a tenth as long as the demo's (a model's 40-140 ms a call):
        # the tour's runs, resumes and --settle wait on that think time alone
        demo = subprocess.Popen([*exam, "demo", "--serve", "--repeats", "1", "--port", str(port),
                                 "--think-scale", "0.1"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in demo.stdout], daemon=True).start()
    printed = []
    try:
        exports = None
        deadline = time.monotonic() + 240
        while exports is None and time.monotonic() < deadline and demo.poll() is None:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            printed.append(line)
            if line.strip().startswith("export EXAM_DB="):
                exports = dict(kv.split("=", 1) for kv in shlex.split(line)[1:])
        assert exports, "exam demo --serve never said how to point the exam at it:\n" + "".join(printed)
        assert not any("HTTP/1.1" in x for x in printed), "web server access lines in the demo"
        token = next(x.split()[-1] for x in printed if "API token" in x)
        # the second terminal can sign and read share links: the token the demo made is exported
        assert exports.get("EXAM_API_TOKEN") == token, exports
        health = None
        while health is None and time.monotonic() < deadline:  # listening a moment after printing
            try:
                health = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
            except requests.ConnectionError:
                time.sleep(0.2)
        assert health is not None and health.status_code == 200
        assert requests.get(f"http://127.0.0.1:{port}/api/runs", timeout=30,
                            headers={"Authorization": f"Bearer {token}"}).status_code == 200
        for command in tour_commands():
            proc = subprocess.run([*exam, *shlex.split(command)[1:]], cwd=tmp_path,
                                  env={**env, **exports}, capture_output=True, text=True,
                                  timeout=300, stdin=subprocess.DEVNULL)
            said = proc.stdout + proc.stderr
            assert "Traceback" not in said, f"{command}:\n{said}"
            # 0 and 1 are verdicts, 3+ name trouble in the data; 2 would be the tour's own mistake
            assert proc.returncode != 2, f"{command} exited 2:\n{said}"
            assert said.strip(), f"{command} printed nothing"
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            demo.kill()
            raise
        finally:
            demo.stdout.close()
    assert demo.returncode == 130
