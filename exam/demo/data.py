"""The coffee-bean shop of the field exam the demo copies: orders, stock and the FAQ the demo
specialists work from."""

from __future__ import annotations

ORDERS = {
    "A10293": {"status": "已出貨", "eta": "2026-09-12", "tracking": "8812-3345-0021",
               "carrier": "黑貓宅急便"},
    "A10301": {"status": "已送達", "delivered": "2026-09-10"},
    "A10302": {"status": "備貨中", "eta": "2026-09-16"},
    "A10305": {"status": "已取消", "cancelled": "2026-09-09", "refund": "退款處理中"},
    "A10312": {"status": "已出貨", "eta": "2026-09-14"},  # no tracking number on file
    "A10320": {"status": "備貨中"},  # no ETA on file
}

STOCK = {
    "耶加雪菲": {"qty": 12},
    "哥倫比亞慧蘭": {"qty": 0, "restock": "2026-09-20"},
    "肯亞 AA": {"qty": 3},
}

# (keywords found by both versions, keywords only v2's retrieval finds, answer, status)
FAQ = [
    (("運費",), (), "訂單滿 1000 元免運費，未滿 1000 元的訂單運費 80 元。", "ok"),
    (("付款方式", "什麼方式付款"), (),
     "可以使用信用卡、ATM 轉帳或 LINE Pay 付款；目前不提供貨到付款。", "ok"),
    (("貨到付款",), (), "本店目前不提供貨到付款，可改用信用卡、ATM 轉帳或 LINE Pay。", "ok"),
    (("多久會出貨", "出貨時間"), (), "付款完成後 2 個工作天內出貨。", "ok"),
    (("烘焙",), (), "我們每週二、週五烘焙，寄出的豆子都是 7 天內烘焙的。", "ok"),
    (("沒開封", "未開封"), (), "未開封的商品在收到後 7 天內可以辦理退貨。", "ok"),
    (("開封了",), (), "已開封的咖啡豆因衛生因素，不接受退貨。", "ok"),
    (("日本", "海外", "國外"), (), "抱歉，我們目前只寄送台灣本島及離島，不提供海外寄送。", "ok"),
    (("自取", "門市"), (), "我們沒有實體門市，也不提供自取，商品都以宅配寄送。", "ok"),
    (("禮盒",), (), "抱歉，我們不提供禮盒包裝。", "ok"),
    (("公斤", "大量"), (), "可以，企業訂購 10 公斤以上請洽客服報價。", "ok"),
    (("地址",), (), "出貨前可以更改收件地址，出貨後就無法更改了。", "ok"),
    (("保存",), (), "開封後請放在陰涼處，建議 2 週內喝完，不建議冷藏。", "ok"),
    # buried inside the 訂購須知 and 付款方式 entries: only a better retrieval finds them
    ((), ("磨",), "可以的，我們提供免費代磨，請在訂單備註寫下研磨粗細。", "ok"),
    ((), ("統編", "發票"), "可以，我們開立電子發票，結帳時填寫統一編號即可。", "ok"),
]
NOT_IN_FAQ = "FAQ 中沒有提到相關資訊，我幫您轉給客服確認。"
