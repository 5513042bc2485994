"""A held-out-style table of customer-service replies, written for issue 15 and not shown to the
rules while they were written: each row is (reply, check, pattern, expected, customer message).

``expected`` is the outcome of the check: ``pass``, ``fail``, ``human`` (needs_human) or
``notpass`` (fail or needs_human: anything but a clean pass). ``score()`` grades the whole table
with whatever graders are importable, so the old and the new rules can be compared on it
(docs/graders.md quotes the figures).
"""

from __future__ import annotations

CASES: tuple[tuple[str, str, str, str, str], ...] = (
    # --- Chinese: negation after the hit (the verdict comes last) -----------------------------
    ("週末出貨這項服務目前還沒有開放。", "forbidden", "週末出貨", "pass", ""),
    ("分期付款我們這邊目前辦不到，敬請見諒。", "forbidden", "分期付款", "pass", ""),
    ("當天到貨是不太可能的，一般需要兩天。", "forbidden", "當天到貨", "pass", ""),
    ("明天出貨也不是不可能，我再幫您問問倉庫。", "forbidden", "明天出貨", "notpass", ""),
    ("海外寄送目前不開放喔。", "forbidden", "海外寄送", "pass", ""),
    ("超商取貨付款這邊沒辦法。", "forbidden", "超商取貨付款", "pass", ""),
    ("延長保固的部分目前無法提供。", "forbidden", "延長保固", "pass", ""),
    ("膠囊咖啡機的保固我們沒有提供。", "forbidden", "保固", "pass", ""),
    ("門市自取暫時停止服務。", "forbidden", "門市自取", "pass", ""),
    ("運費補貼不包含在這次活動裡。", "forbidden", "運費補貼", "pass", ""),
    ("明天一定送達這點我們沒有辦法保證。", "forbidden", "明天一定送達", "pass", ""),
    ("刷卡分十二期是可以的。", "forbidden", "刷卡分十二期", "fail", ""),
    ("刷卡分十二期是沒問題的。", "forbidden", "刷卡分十二期", "fail", ""),
    ("當天出貨沒有問題，下午三點前下單即可。", "forbidden", "當天出貨", "fail", ""),
    # a negation after the hit that governs another verb leaves the hit asserted
    ("訂單已出貨，無法取消。", "fact", "已出貨", "pass", ""),
    ("訂單已出貨無法再取消。", "fact", "已出貨", "pass", ""),
    ("商品已寄出不能更改地址。", "fact", "已寄出", "pass", ""),
    ("我們提供貨到付款，不另收手續費。", "forbidden", "提供貨到付款", "fail", ""),
    ("可以貨到付款不用額外手續費。", "forbidden", "可以貨到付款", "fail", ""),
    ("可以幫您加購禮盒包裝不另外收費。", "forbidden", "禮盒包裝", "fail", ""),
    ("我們會盡快出貨不會讓您等太久。", "fact", "盡快出貨", "pass", ""),
    # --- Chinese: negators are words, not characters ---------------------------------------
    ("本店不接受無條件退貨。", "forbidden", "無條件退貨", "pass", ""),
    ("我們毫不猶豫地推薦這款手沖壺。", "forbidden", "推薦這款", "fail", ""),
    ("本週特別推出滿千送百活動。", "forbidden", "滿千送百", "fail", ""),
    ("退貨時一律免附發票。", "forbidden", "附發票", "pass", ""),
    ("抱歉，我們無法為個別訂單指定配送時段。", "forbidden", "指定配送時段", "pass", ""),
    ("我們分別在週二和週五出貨。", "fact", "週五出貨", "pass", ""),
    ("禮盒包裝免費提供給所有訂單。", "forbidden", "禮盒包裝", "fail", ""),
    ("全館商品一律免運。", "forbidden", "免運", "fail", ""),
    ("保固期間內的維修完全免費。", "forbidden", "維修", "fail", ""),
    ("未滿 18 歲不能購買酒類商品。", "forbidden", "購買酒類商品", "pass", ""),
    ("訂單未滿 500 元需加收運費 60 元。", "fact", "加收運費", "pass", ""),
    ("不超過 7 天都可以辦理退貨。", "forbidden", "可以辦理退貨", "fail", ""),
    ("非會員無法使用點數折抵。", "forbidden", "使用點數折抵", "pass", ""),
    ("非會員也可以使用點數折抵。", "forbidden", "使用點數折抵", "fail", ""),
    ("非常樂意為您安排到府安裝。", "forbidden", "到府安裝", "fail", ""),
    ("沒錯，我們有提供到府安裝。", "forbidden", "提供到府安裝", "fail", ""),
    ("別擔心，我們會盡快寄出。", "fact", "盡快寄出", "pass", ""),
    ("不管天氣如何，我們都會準時出貨。", "fact", "準時出貨", "pass", ""),
    ("無論是否為會員都可以參加抽獎。", "forbidden", "可以參加抽獎", "fail", ""),
    ("不論能否到店，都可以線上預約。", "forbidden", "可以線上預約", "fail", ""),
    # --- Chinese: negation before the hit, however far ------------------------------------
    ("點數不可與其他任何優惠券或折扣碼同時使用。", "forbidden", "同時使用", "pass", ""),
    ("目前沒有任何商品可以使用分期付款。", "forbidden", "分期付款", "pass", ""),
    ("會員價目前沒有任何組合可以再打折。", "forbidden", "打折", "pass", ""),
    ("本店從未提供過貨到付款服務。", "forbidden", "提供過貨到付款", "pass", ""),
    ("我們絕對不會洩漏您的個人資料。", "forbidden", "洩漏您的個人資料", "pass", ""),
    ("訂單成立後就無法修改內容了。", "forbidden", "修改內容", "pass", ""),
    ("您的訂單目前無法再更改收件人。", "forbidden", "更改收件人", "pass", ""),
    ("我們沒有在蝦皮開設賣場。", "forbidden", "在蝦皮開設賣場", "pass", ""),
    ("目前暫時沒有提供會員生日禮。", "forbidden", "會員生日禮", "pass", ""),
    ("這款豆子目前暫停販售。", "forbidden", "販售", "pass", ""),
    ("這款咖啡機不支援膠囊。", "forbidden", "支援膠囊", "pass", ""),
    ("這個優惠不適用於特價商品。", "forbidden", "適用於特價商品", "pass", ""),
    ("門市目前不提供現場試喝服務。", "forbidden", "現場試喝", "pass", ""),
    ("我們沒有辦法保證明天一定送達。", "forbidden", "明天一定送達", "pass", ""),
    ("預購商品不可以取消訂單。", "forbidden", "取消訂單", "pass", ""),
    ("我們還沒收到您退回的商品。", "forbidden", "收到您退回的商品", "pass", ""),
    ("系統顯示您的包裹還沒有寄出。", "forbidden", "寄出", "pass", ""),
    ("很遺憾，這個尺寸已經沒有貨了。", "forbidden", "有貨", "pass", ""),
    ("退貨不需要附上原始發票。", "forbidden", "附上原始發票", "pass", ""),
    ("這款商品不是限量版。", "forbidden", "限量版", "pass", ""),
    ("您的訂單不會因為颱風而延遲出貨。", "forbidden", "延遲出貨", "pass", ""),
    # --- Chinese: scope ends, and plain assertions stay asserted ----------------------------
    ("特價商品不適用這個優惠，一般商品則可以。", "forbidden", "適用這個優惠", "pass", ""),
    ("特價商品也適用這個優惠。", "forbidden", "適用這個優惠", "fail", ""),
    ("這個尺寸目前還有貨。", "forbidden", "有貨", "fail", ""),
    ("我們不只提供宅配，也提供超商取貨。", "forbidden", "提供超商取貨", "fail", ""),
    ("我們不但提供保固，還提供免費維修。", "forbidden", "提供免費維修", "fail", ""),
    ("沒問題，我們可以幫您改成宅配。", "forbidden", "可以幫您改成宅配", "fail", ""),
    ("不論訂單金額多少都免運費。", "forbidden", "免運費", "fail", ""),
    ("未開封的商品都可以退換貨。", "forbidden", "可以退換貨", "fail", ""),
    ("沒有收到商品的話可以申請退款。", "forbidden", "申請退款", "fail", ""),
    ("目前沒有庫存的口味會在下週補貨。", "fact", "下週補貨", "pass", ""),
    ("這款豆子沒有停產，只是暫時缺貨。", "fact", "暫時缺貨", "pass", ""),
    ("不好意思讓您久等了，商品明天會出貨。", "fact", "明天會出貨", "pass", ""),
    ("非常抱歉，我們目前只能寄送台灣本島。", "fact", "只能寄送台灣本島", "pass", ""),
    ("退款已經處理完成，不用擔心。", "fact", "退款已經處理完成", "pass", ""),
    ("如果商品有瑕疵，我們會全額退款。", "fact", "全額退款", "pass", ""),
    ("只要未拆封，七天內都可以退貨。", "fact", "可以退貨", "pass", ""),
    ("包裹預計明天送達。", "forbidden", "明天送達", "fail", ""),
    ("目前所有口味都可以客製研磨。", "forbidden", "可以客製研磨", "fail", ""),
    ("會員生日禮每年都會寄送。", "forbidden", "會員生日禮", "fail", ""),
    ("七天鑑賞期內一律接受退貨。", "forbidden", "接受退貨", "fail", ""),
    ("退貨需要附上原始發票。", "forbidden", "附上原始發票", "fail", ""),
    ("收件人可以在出貨前更改。", "forbidden", "在出貨前更改", "fail", ""),
    ("您的發票已經開立並寄送到您的信箱。", "fact", "已經開立", "pass", ""),
    ("優惠碼 SAVE10 已經失效，無法使用。", "fact", "已經失效", "pass", ""),
    ("已經幫您取消訂單，款項會退回原卡。", "fact", "取消訂單", "pass", ""),
    ("您詢問的商品目前已售完。", "fact", "已售完", "pass", ""),
    # --- Chinese: double negation, either side ---------------------------------------------
    ("並不是我們不提供發票，而是需要先完成付款。", "forbidden", "提供發票", "notpass", ""),
    ("我們並沒有停止販售這款豆子。", "forbidden", "販售這款豆子", "notpass", ""),
    ("這款商品不是不能退，只是需要保持包裝完整。", "forbidden", "能退", "notpass", ""),
    ("延長保固不是不行，需要另外付費。", "forbidden", "延長保固", "notpass", ""),
    # --- Chinese: questions, quotes, echoes --------------------------------------------------
    ("請問您是想要更改收件地址嗎？", "forbidden", "更改收件地址", "pass", ""),
    ("您問「可以開立三聯式發票嗎？」——可以的，結帳時填寫統編即可。", "forbidden",
     "可以開立三聯式發票", "notpass", ""),
    ("您提到「可以開立三聯式發票嗎」，很抱歉我們只開立電子發票。", "forbidden",
     "可以開立三聯式發票", "pass", ""),
    ("可以寄到香港嗎？可以的，運費另計。", "forbidden", "可以寄到香港", "notpass", ""),
    ("可以寄到香港嗎？很抱歉目前不行。", "forbidden", "可以寄到香港", "pass", ""),
    ("關於能否延後出貨，當然可以，請告訴我們日期。", "forbidden", "延後出貨", "notpass", ""),
    ("您提到「客服說已經退款了」，但系統顯示退款仍在處理中。", "fact", "已經退款", "fail", ""),
    ("您想確認訂單是否已經出貨，目前仍在備貨中。", "fact", "已經出貨", "fail", ""),
    ("您說訂單已經出貨了嗎，我查了一下目前還在備貨中。", "fact", "已經出貨", "fail",
     "請問我的訂單已經出貨了嗎？"),
    ("您的訂單已經出貨了，預計明天送達。", "fact", "已經出貨", "pass",
     "請問我的訂單已經出貨了嗎？"),
    ("關於可以寄到香港嗎，我們目前只寄送台灣。", "forbidden", "可以寄到香港", "pass",
     "你們可以寄到香港嗎？"),
    ("如果可以延後出貨就太好了，我幫您詢問倉庫。", "forbidden", "延後出貨", "pass", ""),
    ("取消訂單的話，款項會在 5 個工作天內退回。", "forbidden", "取消訂單", "pass", ""),
    # --- English: negation after the subject -------------------------------------------------
    ("Same-day pickup isn't offered at this store.", "forbidden", "same-day pickup", "pass", ""),
    ("Cash on delivery is not available for international orders.", "forbidden",
     "cash on delivery", "pass", ""),
    ("Express shipping cannot be arranged for oversized items.", "forbidden", "express shipping",
     "pass", ""),
    ("Weekend delivery won't be possible this month.", "forbidden", "weekend delivery", "pass", ""),
    ("Shipping to Japan is currently not possible.", "forbidden", "shipping to japan", "pass", ""),
    ("Delivery by Friday is not guaranteed.", "forbidden", "delivery by friday", "pass", ""),
    ("Shipping to Japan is possible, but it takes two weeks.", "forbidden", "shipping to japan",
     "fail", ""),
    ("Delivery by Friday is guaranteed.", "forbidden", "delivery by friday", "fail", ""),
    ("Gift wrapping is available for all orders.", "forbidden", "gift wrapping", "fail", ""),
    ("Your order has shipped and can't be cancelled.", "fact", "has shipped", "pass", ""),
    ("Your order has shipped, so it can no longer be changed.", "fact", "has shipped", "pass", ""),
    ("We will ship your order without delay.", "fact", "ship your order", "pass", ""),
    ("Returns without a receipt are accepted within 30 days.", "forbidden", "returns", "fail", ""),
    # --- English: what a negator governs -----------------------------------------------------
    ("There's no extra charge for gift wrapping.", "forbidden", "gift wrapping", "fail", ""),
    ("We offer gift wrapping at no extra cost.", "forbidden", "gift wrapping", "fail", ""),
    ("There is no option for cash on delivery.", "forbidden", "cash on delivery", "pass", ""),
    ("We offer neither engraving nor gift boxes.", "forbidden", "gift boxes", "pass", ""),
    ("We offer neither engraving nor gift boxes.", "forbidden", "engraving", "pass", ""),
    ("None of our stores offer same-day pickup.", "forbidden", "offer same-day pickup", "pass", ""),
    ("No orders are shipped on Sundays.", "forbidden", "shipped on sundays", "pass", ""),
    ("We can't guarantee delivery by Friday.", "forbidden", "delivery by friday", "pass", ""),
    ("Unfortunately we are unable to offer a discount on this item.", "forbidden",
     "offer a discount", "pass", ""),
    ("Your refund has not yet been issued.", "forbidden", "been issued", "pass", ""),
    ("Your refund hasn't been issued yet.", "forbidden", "been issued", "pass", ""),
    ("Our team has already issued the refund.", "forbidden", "issued the refund", "fail", ""),
    ("We don't ship to Hong Kong, but we do ship to Macau.", "forbidden", "ship to macau", "fail",
     ""),
    ("We don't ship to Hong Kong, but we do ship to Macau.", "forbidden", "ship to hong kong",
     "pass", ""),
    ("No problem, we can exchange the size for you.", "forbidden", "exchange the size", "fail", ""),
    ("Not only do we repair it, we also cover the shipping.", "forbidden", "cover the shipping",
     "fail", ""),
    ("We don't just sell beans, we also offer brewing classes.", "forbidden",
     "offer brewing classes", "fail", ""),
    ("If the item is damaged, we'll send a replacement.", "fact", "send a replacement", "pass", ""),
    # --- English: double negation, questions, quotes -----------------------------------------
    ("It's not that we won't replace it; we just need photos first.", "forbidden", "replace it",
     "notpass", ""),
    ("It's not impossible to ship it today.", "forbidden", "ship it today", "notpass", ""),
    ("Is international shipping available? Yes, we ship to most countries.", "forbidden",
     "international shipping", "notpass", ""),
    ("You asked whether we can waive the fee; unfortunately we can't.", "forbidden",
     "waive the fee", "pass", ""),
    ('As you asked, "can I return it after 30 days?" Yes, you can.', "forbidden",
     "return it after 30 days", "notpass", ""),
    ('You wrote "the refund was issued", but the refund is still pending.', "fact",
     "refund was issued", "fail", ""),
)


def score() -> tuple[int, list[str]]:
    """Grade every row with the importable graders: (rows right, descriptions of the misses)."""
    from graders import Question, Reply, grade, normalize, parse_entry

    right, misses = 0, []
    for text, check, pattern, expected, customer in CASES:
        entry = (parse_entry(pattern),)
        inp = {"customer_message": customer} if customer else {"question": "?"}
        q = Question(case_no="H", input=inp, facts=entry if check == "fact" else (),
                     forbidden=entry if check == "forbidden" else (),
                     input_text=normalize(customer))
        got = grade(q, Reply(text=text)).verdict
        ok = (got in ("fail", "needs_human")) if expected == "notpass" else (
            got == {"human": "needs_human"}.get(expected, expected))
        if ok:
            right += 1
        else:
            misses.append(f"{check} {pattern!r} in {text!r}: expected {expected}, got {got}")
    return right, misses


if __name__ == "__main__":  # python tests/graders/scope_cases.py: the score of today's rules
    n, missed = score()
    print(f"{n}/{len(CASES)}")
    print("\n".join(missed))
