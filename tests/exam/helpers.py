from __future__ import annotations

import json
from pathlib import Path

from exam.registry import Agent

FACTS = ["備貨中"]


def write_bank(tmp_path: Path, behaviours: list[str], name: str = "T", **extra) -> Path:
    questions = [
        {"case_no": f"{name}-{i + 1:02d}", "category": "test",
         "input": {"task_id": f"{name}-{i + 1:02d}", "behaviour": b, "question": "查 A10302"},
         "expect_status": "ok", "expect_facts": FACTS, **extra}
        for i, b in enumerate(behaviours)
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"agent": name, "questions": questions}, ensure_ascii=False),
                    encoding="utf-8")
    return path


def agent_for(url: str, bank: Path, **kw) -> Agent:
    kw.setdefault("timeout_s", 2.0)
    return Agent(name=bank.stem, url=url, bank=str(bank), **kw)


def registry_env(tmp_path: Path, url: str, bank: Path, **agent) -> dict[str, str]:
    """An agents.yaml with one agent T, and the environment pointing `exam` at it."""
    import os

    import yaml

    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {
        "url": url, "bank": str(bank), "timeout_s": 5, **agent}}}))
    return {**os.environ, "EXAM_DB": str(tmp_path / "exam.db"), "EXAM_AGENTS": str(registry)}
