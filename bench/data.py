"""Synthetic but realistic data for the re-grading benchmark: Chinese replies of 100–400
characters, questions with 3–6 checks each, stored as runs of several versions."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

SENTENCES = [
    "您好，感謝您的來信", "訂單 A{n} 目前備貨中", "預計 2026-09-{d:02d} 到貨", "本店目前不提供貨到付款",
    "可以使用信用卡、ATM 轉帳或 LINE Pay 付款", "已開封的咖啡豆因衛生因素不接受退貨",
    "未開封的商品在收到後 7 天內可以辦理退貨", "訂單滿 1000 元免運費", "未滿的訂單運費 80 元",
    "關於是否可以更改收件地址，我們會請專人確認後回覆您", "很抱歉讓您久等", "我們提供貨到付款",
    "物流單號確認後會再提供給您", "我們每週二、週五烘焙", "開封後請放在陰涼處，建議 2 週內喝完",
    "FAQ 中沒有提到相關資訊，我幫您轉給客服確認", "目前沒有任何多包組合或會員專屬方案可以打折",
    "如有其他問題歡迎隨時詢問", "並非不能退貨，但需要先確認商品狀態", "耶加雪菲目前有現貨，庫存 12 包",
]
FACTS = ["備貨中|packing", "re:2026-09-\\d\\d", "不提供貨到付款|沒有貨到付款", "信用卡", "re:7 ?天內",
         "陰涼", "re:1000 ?元", "確認", "現貨|有庫存", "週二|星期二"]
FORBIDDEN = ["提供貨到付款|可以貨到付款", "已出貨|shipped", "可以退貨", "re:\\d+ ?折|打折",
             "建議冷藏|放冰箱", "全館免運"]


def reply(rng: random.Random) -> str:
    parts, size = [], 0
    target = rng.randint(100, 400)
    while size < target:
        s = rng.choice(SENTENCES).format(n=rng.randint(10000, 10400), d=rng.randint(10, 20))
        s += rng.choice("，，，。")
        parts.append(s)
        size += len(s) + 1
    return "".join(parts)[:400].rstrip("，。") + "。"


def bank(rng: random.Random, agent: str, questions: int) -> dict:
    qs = []
    for i in range(questions):
        n_checks = rng.randint(3, 6)
        n_facts = rng.randint(1, n_checks - 2)
        n_forbidden = n_checks - 1 - n_facts
        qs.append({"case_no": f"{agent}-{i + 1:03d}", "category": f"c{i % 5}",
                   "input": {"task_id": f"{agent}-{i + 1:03d}", "question": "查訂單 A10302",
                             "facts_known": {"order_id": "A10302"}},
                   "expect_status": "ok", "expect_facts": rng.sample(FACTS, n_facts),
                   "expect_forbidden": rng.sample(FORBIDDEN, n_forbidden)})
    return {"agent": agent, "questions": qs}


def build_store(dir: Path, *, agents: int = 3, questions: int = 20, versions: int = 8,
                replies: int = 100_000, seed: int = 7) -> Path:
    """A store of ``replies`` cells spread evenly over agents × versions × questions."""
    from exam.bank import load_bank
    from exam.db.schema import cells
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run
    from exam.store import Store

    rng = random.Random(seed)
    db = dir / "regrade.db"
    store = Store(db)
    repeats = max(1, replies // (agents * questions * versions))
    for a in range(agents):
        name = f"B{a + 1}"
        path = dir / f"{name}.json"
        path.write_text(json.dumps(bank(rng, name, questions), ensure_ascii=False), "utf-8")
        digests = {i.case_no: i.digest for i in load_bank(path).items}
        for v in range(versions):
            agent = Agent(name=name, url="http://127.0.0.1:9/x", bank=str(path))
            run_id = create_run(store, agent, f"v{v + 1}", repeats=repeats)
            rows = []
            for case_no, digest in digests.items():
                for r in range(1, repeats + 1):
                    rows.append(dict(
                        run_id=run_id, case_no=case_no, repeat=r, question_digest=digest,
                        run_status="ok", error="", text=reply(rng), status="ok", truncated=0,
                        steps=None, attempts=1, model_calls=rng.randint(1, 4),
                        tokens=rng.randint(800, 2500), latency_ms=rng.uniform(200, 3000),
                        completed_at=time.time()))
            with store.tx() as con:  # one INSERT of many rows: this builds the store, not a run
                con.execute(cells.insert(), rows)
            store.set_run_status(run_id, "done")
    store.close()
    return db
