"""Simulated specialists that answer like n8n workflows with a model behind them.

They answer from the tables in ``data.py``; the two versions differ the way real
prompt/model changes do: most questions right in both, a handful of boundary
questions only one version gets right, one flaky answer, and (v1) an order-number
lookup that hits the AI Agent's max-iterations limit on its first try.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from typing import Any

from flask import Flask, jsonify, request

from exam.demo.data import FAQ, NOT_IN_FAQ, ORDERS, STOCK

ORDER_ID = re.compile(r"^A\d{5}$")


class Specialist:
    """One agent in one version; ``latency_scale`` shrinks the simulated think time."""

    def __init__(self, name: str, version: str, seed: int = 0, latency_scale: float = 1.0):
        self.name, self.version = name, version
        self.rng = random.Random(f"{name}-{version}-{seed}")
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.latency_scale = latency_scale

    # -- shared -------------------------------------------------------------------------

    def _count(self, key: str) -> int:
        with self.lock:
            self.calls[key] += 1
            return self.calls[key]

    def _usage(self, calls: int, base_tokens: int) -> dict[str, int]:
        with self.lock:
            jitter = self.rng.randint(-150, 150)
        return {"model_calls": calls, "total_tokens": base_tokens + jitter}

    def _think(self, calls: int) -> None:
        with self.lock:
            ms = sum(self.rng.uniform(40, 140) for _ in range(calls))
            if self.rng.random() < 0.03:
                ms += self.rng.uniform(300, 600)  # the occasional slow model call
        time.sleep(ms / 1000 * self.latency_scale)

    def handle(self, order: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        handler = {"W1": self.w1, "W2": self.w2, "W3": self.w3}[self.name]
        return handler(order)

    def reply(self, answer: str, status: str, steps: list[tuple[str, dict]], calls: int = 2,
              tokens: int = 1200) -> tuple[int, dict[str, Any]]:
        self._think(calls)
        return 200, {
            "answer": answer, "status": status, "usage": self._usage(calls, tokens),
            "intermediateSteps": [{"action": {"tool": t, "toolInput": a}, "observation": "…"}
                                  for t, a in steps],
        }

    # -- W1: orders and stock -------------------------------------------------------------

    def _order_ids(self, order: dict[str, Any]) -> list[str]:
        known = order.get("facts_known") or {}
        ids = known.get("order_ids") or ([known["order_id"]] if "order_id" in known else [])
        return [str(i) for i in ids]

    def _describe(self, oid: str, need: list[str]) -> tuple[str, str]:
        o = ORDERS[oid]
        if o["status"] == "已送達":
            return f"已送達（{o['delivered']}）", "ok"
        if o["status"] == "已取消":
            return f"已取消（{o['cancelled']}），{o['refund']}", "ok"
        parts, status = [o["status"]], "ok"
        if "tracking" in need:
            if o.get("tracking"):
                parts.append(f"{o['carrier']}單號 {o['tracking']}")
            else:
                parts.append("但系統中沒有物流單號，需要向物流商確認")
                status = "incomplete"
        if o.get("eta"):
            parts.append(f"預計 {o['eta']} 到貨")
        elif "eta" in need:
            parts.append("系統尚未排定到貨時間，待倉庫確認")
            status = "incomplete"
        return "，".join(parts), status

    def w1(self, order: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        need = list(order.get("need") or [])
        known = order.get("facts_known") or {}
        if "product" in known:
            name = known["product"]
            stock = STOCK.get(name)
            steps = [("query_stock_sheet", {"product": name})]
            if stock is None:
                return self.reply(f"商品表中查無「{name}」這個品項。", "not_found", steps)
            if stock["qty"] == 0:
                return self.reply(f"{name}目前缺貨，預計 {stock['restock']} 補貨。", "ok", steps)
            return self.reply(f"{name}目前有現貨，庫存 {stock['qty']} 包。", "ok", steps)
        ids = self._order_ids(order)
        if not ids:
            return self.reply("請提供訂單編號，我才能幫您查詢。", "invalid_input", [], calls=1,
                              tokens=700)
        if ids == ["A1029"] and self.version == "v1" and self._count("A1029") % 2 == 1:
            # W1-11: n8n's AI Agent node stops at Max Iterations on the first try, as it did in the
            # field exam this demo copies
            self._think(6)
            return 500, {"error": "Agent stopped due to max iterations.",
                         "usage": self._usage(6, 2400)}
        lines, statuses, steps = [], [], []
        for raw in ids:
            oid = raw.upper() if self.version == "v2" else raw
            if not ORDER_ID.match(oid):
                lines.append(f"訂單編號 {raw} 格式不正確（應為 A 加 5 位數字），請確認訂單編號。")
                statuses.append("invalid_input")
                continue
            steps.append(("query_order_sheet", {"order_id": oid}))
            if oid not in ORDERS:
                if len(ids) > 1 and self.version == "v1":
                    continue  # v1 quietly drops an order it cannot find
                lines.append(f"{oid}：查無此訂單，請確認編號" if len(ids) > 1
                             else f"查無訂單 {oid}，請確認訂單編號是否正確。")
                statuses.append("not_found")
                continue
            text, status = self._describe(oid, need)
            lines.append(f"{oid}：{text}" if len(ids) > 1 else f"訂單 {oid} {text}。")
            statuses.append(status)
        if len(ids) > 1:
            status = "ok" if all(s == "ok" for s in statuses) else "incomplete"
            return self.reply("；".join(lines) + "。", status, steps, tokens=1500)
        return self.reply(lines[0], statuses[0], steps)

    # -- W2: the FAQ ----------------------------------------------------------------------

    def w2(self, order: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        question = str(order.get("question", ""))
        steps = [("faq_vector_store", {"query": question})]
        if "保存" in question and self._count("保存") % 3 == 0:
            # the flaky one: every third answer drifts from the FAQ
            return self.reply("咖啡豆建議放冰箱冷藏保存，風味比較穩定。", "ok", steps, calls=2,
                              tokens=2100)
        for visible, hidden, answer, status in FAQ:
            keys = visible + (hidden if self.version == "v2" else ())
            if any(k in question for k in keys):
                return self.reply(answer, status, steps, calls=2, tokens=2000)
        return self.reply(NOT_IN_FAQ, "not_in_faq", steps, calls=2, tokens=1900)

    # -- W3: drafting the customer reply ------------------------------------------------

    def w3(self, order: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        msg = str(order.get("customer_message", ""))
        facts = order.get("facts") or []
        by_order: dict[str, dict[str, str]] = {}
        general: dict[str, str] = {}
        for f in facts:
            src = str(f.get("source", ""))
            key, value = str(f.get("key")), str(f.get("value"))
            if src.startswith(("orders!", "logistics!")):
                by_order.setdefault(src.split("!", 1)[1], {})[key] = value
            else:
                general[key] = value
                general["_product"] = src.split("!", 1)[-1]
        extra_tokens = 120 if self.version == "v2" else 0  # v2's prompt has three more rules
        parts: list[str] = []
        wants_date = any(k in msg for k in ("什麼時候", "哪天", "到了", "到哪", "還沒到"))
        for oid, f in by_order.items():
            bits = [f"訂單 {oid}"]
            if "reason" in f:
                bits.append(f"因{f['reason']}而延遲，新的預計到貨日是 {f['new_eta']}")
            else:
                if "status" in f:
                    bits.append(f["status"] if f["status"] != "備貨中" else "目前備貨中")
                if "carrier" in f:
                    bits.append(f"由{f['carrier']}配送")
                if "eta" in f:
                    bits.append(f"預計 {f['eta']} 到貨")
                elif wants_date and f.get("status") == "備貨中":
                    bits.append("預計 3 天內到貨" if self.version == "v1"
                                else "到貨時間確認後會再通知您")
                if "refund_days" in general:
                    bits.append(f"退款會在 {general['refund_days']}內退回原付款方式")
                elif "退" in msg and f.get("status") == "已取消":
                    bits.append("會退您 900 元" if self.version == "v1"
                                else "退款金額確認後會再通知您")
                elif f.get("status") == "已取消":
                    bits.append("退款處理中")
                if "單號" in msg and "tracking" not in f:
                    bits.append("物流單號確認後會再提供給您")
                if "地址" in msg:
                    bits.append("關於是否可以更改收件地址，我們會請專人確認後回覆您")
            parts.append(" ".join(bits[:2]) + ("，" + "，".join(bits[2:]) if bits[2:] else ""))
        text = "；".join(parts)
        if "shipping_fee" in general:
            text = (f"訂單滿 {general['free_shipping_over']} 元才能免運費，目前的訂單運費是 "
                    f"{general['shipping_fee']} 元")
        if "price" in general:
            text = (f"{general['_product']}{general['price']}，目前沒有任何多包組合或會員專屬方案"
                    "可以打折，如有活動會再公告")
            if self.version == "v1":
                # a double negation: is a discount on offer or not? a person must say (the
                # demo's review queue)
                text = (f"{general['_product']}{general['price']}，兩包一起買也不是不能打折，"
                        "要看當期活動")
        if "stock" in general:
            text = f"{general['_product']}目前缺貨，補貨時間確認後會再通知您"
        if "member_since" in general:
            text = (f"感謝您從 {general['member_since']} 年起的支持！目前沒有針對老客戶的優惠活動，"
                    "有新活動會第一時間通知您")
            if self.version == "v2":
                text = f"感謝您從 {general['member_since']} 年起的支持！下次購物享 9 折優惠"
        if any(k in msg for k in ("折扣", "補償")):
            text += "。補償的部分我們無法在此承諾，會請專人與您聯繫"
        if "試喝" in msg:
            text += "。目前無法承諾加贈試喝包，謝謝您的支持"
        steps = [("draft_reply", {"facts": len(facts)})]
        return self.reply(f"您好，{text}。", "ok", steps, calls=2, tokens=1250 + extra_tokens)


def create_app(specialists: dict[tuple[str, str], Specialist]) -> Flask:
    """One Flask app serving every specialist at /webhook/<version>/<agent>, n8n style."""
    app = Flask("exam-demo-agents")

    @app.post("/webhook/<version>/<agent>")
    def webhook(version: str, agent: str):
        spec = specialists.get((agent, version))
        if spec is None:
            return jsonify(code=404, message=f'The requested webhook "POST {version}/{agent}" is '
                                             "not registered.",
                           hint="Click the 'Execute workflow' button on the canvas, then try "
                                "again."), 404
        order = request.get_json(silent=True)
        if not isinstance(order, dict):
            return jsonify(error="expected a JSON work order"), 400
        status, body = spec.handle(order)
        return jsonify(body), status

    return app
