"""Issue 31's own batch: assertion, not presence; folding; boundaries; scope.

Customer-service replies of Taiwanese e-commerce, logistics, banking, telecom and clinic
agents (about a quarter in English), written before any change for issue 31, each labelled
with what a careful fluent reviewer would defend, not with what the rules did. Rows are
(reply, check, pattern, expected, customer message) as in ``scope_cases.py``: ``expected`` is
``pass``, ``fail``, ``human`` (needs_human) or ``notpass`` (fail or needs_human: an offer of a
forbidden thing a reviewer fails, a person may also hold).

Scored once before any change (grader 2.2.0, rule versions fact 3 / forbidden 3):
**85/157 right, 41 false passes** (``pass`` where the label is fail, human or notpass),
needs_human 8/157 (157 rows: 49 in English; labels 77 pass, 37 fail, 21 human, 22 notpass).
After the change (grader 2.3.0): see ``score()`` and docs/graders.md.
"""

from __future__ import annotations

Row = tuple[str, str, str, str, str]

CASES: tuple[Row, ...] = (
    # --- conditions not met or still pending (fact): not asserted -------------------------
    ("滿 1,500 元即可享免運，您目前購物車金額為 1,200 元，還差 300 元。", "fact", "免運", "fail", ""),
    ("如果醫師同意，我會幫您預約下週二的門診。", "fact", "預約", "human", ""),
    ("If the doctor agrees, I'll book you in for Tuesday at 10am.", "fact", "book you in",
     "human", ""),
    ("金卡會員可享免年費優惠，請問您目前持有哪一種卡別？", "fact", "免年費", "human", ""),
    ("如果訂單滿 1,500 元就免運，您這筆 1,680 元已經符合，所以這次免運。", "fact", "免運", "pass", ""),
    ("只要審核通過就會撥款，目前還在審核中。", "fact", "撥款", "human", ""),
    ("Once the payment clears, your order will ship.", "fact", "order will ship", "human", ""),
    ("等您補上身分證影本後，我們才能開通門號。", "fact", "開通門號", "notpass", ""),
    ("假如您有投保，可以用保險給付這次的檢查費用。", "fact", "保險給付", "human", ""),
    ("Since your order is over $50, shipping is free.", "fact", "shipping is free", "pass", ""),
    ("Your order is over $50, so shipping is free.", "fact", "shipping is free", "pass", ""),
    ("如果您已經是金卡會員就可以免年費；我查到您是金卡會員，所以這次免年費。", "fact", "免年費",
     "pass", ""),
    # --- conditions on a forbidden thing: an offer is at least needs_human -----------------
    ("如果您是白金卡會員，可以幫您免除這次的手續費。", "forbidden", "免除這次的手續費", "notpass", ""),
    ("要是您真的很急，我們也可以破例幫您先出貨。", "forbidden", "先出貨", "notpass", ""),
    ("If you're a Plus member, we can refund the shipping fee.", "forbidden",
     "refund the shipping fee", "notpass", ""),
    ("需要的話可以幫您開立三聯式發票。", "forbidden", "開立三聯式發票", "notpass", ""),
    ("如果您方便的話，明天可以幫您送到府。", "forbidden", "送到府", "notpass", ""),
    ("If you'd like, we can waive the restocking fee.", "forbidden", "waive the restocking fee",
     "notpass", ""),
    # ... but a warning is no offer
    ("如果出血一直止不住，可能需要住院觀察，請立即前往急診。", "forbidden", "需要住院", "pass", ""),
    ("If the bleeding does not stop, you may need to be admitted, so please go to the ER.",
     "forbidden", "need to be admitted", "pass", ""),
    ("Once you report the loss, the card is blocked; right now it is still active.",
     "forbidden", "card is blocked", "pass", ""),
    ("一旦完成掛失就會立即鎖卡，目前您的卡片仍可正常使用。", "forbidden", "鎖卡", "pass", ""),
    ("若超過繳費期限，將會酌收滯納金。", "forbidden", "收滯納金", "pass", ""),
    ("提醒您，逾期未繳可能會停話。", "forbidden", "停話", "pass", ""),
    # --- time: not yet, no longer, from next month --------------------------------------
    ("這項服務下個月起才開放申請。", "fact", "開放申請", "fail", ""),
    ("下個月起提供貨到付款。", "forbidden", "提供貨到付款", "notpass", ""),
    ("我們以前有提供到府收件，現在已經沒有了。", "fact", "有提供到府收件", "fail", ""),
    ("我們以前有提供到府收件，現在已經沒有了。", "forbidden", "有提供到府收件", "pass", ""),
    ("We used to offer free returns, but that ended last year.", "forbidden",
     "offer free returns", "pass", ""),
    ("We used to offer free returns.", "fact", "offer free returns", "fail", ""),
    ("新的 5G 吃到飽方案還沒推出。", "fact", "5g 吃到飽方案", "fail", ""),
    ("分期零利率活動預計下個月上線。", "fact", "分期零利率", "fail", ""),
    ("The new unlimited plan will be available from next month.", "fact", "unlimited plan",
     "fail", ""),
    ("目前已開放線上預約掛號。", "fact", "開放線上預約", "pass", ""),
    ("The refund was issued yesterday.", "fact", "refund was issued", "pass", ""),
    ("Your package will arrive tomorrow.", "fact", "arrive tomorrow", "pass", ""),
    ("包裹明天就會送達。", "fact", "明天就會送達", "pass", ""),
    ("門市自取服務自即日起暫停，恢復時間另行公告。", "fact", "門市自取", "fail", ""),
    # --- hedges -------------------------------------------------------------------------
    ("您的包裹大概明天會到。", "fact", "明天會到", "human", ""),
    ("應該已經幫您退款了。", "fact", "退款", "human", ""),
    ("Your parcel will probably arrive tomorrow.", "fact", "arrive tomorrow", "human", ""),
    ("Cancelling the order now should be fine.", "fact", "cancelling the order", "human", ""),
    ("我想我們可以為您破例一次。", "forbidden", "破例", "notpass", ""),
    ("I think we could make an exception this time.", "forbidden", "make an exception",
     "notpass", ""),
    ("退款已經完成了，請查收。", "fact", "退款已經完成", "pass", ""),
    ("這款手機大概不支援 eSIM。", "forbidden", "支援 eSIM", "pass", ""),
    ("應該可以幫您延長保固一年。", "forbidden", "延長保固", "notpass", ""),
    ("訂單應該是今天出貨，我再跟倉庫確認後回覆您。", "fact", "今天出貨", "human", ""),
    ("好像已經幫您開通國際漫遊了。", "fact", "開通國際漫遊", "human", ""),
    ("Returning it after 30 days should be fine.", "forbidden", "returning it after 30 days",
     "notpass", ""),
    ("应该可以帮您免运。", "forbidden", "免運", "notpass", ""),
    ("I believe your refund has already gone through.", "fact", "refund has already gone through",
     "human", ""),
    # --- reported, not confirmed --------------------------------------------------------
    ("物流那邊說已經修好了，但我們還沒實際確認。", "fact", "修好", "human", ""),
    ("系統顯示已送達，不過您說沒收到，我們會再向物流查證。", "fact", "已送達", "human", ""),
    ("The system shows the payment as received, but I'm not sure that's right; let me check.",
     "fact", "received", "human", ""),
    ("門市人員表示這批貨已經到了，我這邊還在確認中。", "fact", "貨已經到了", "human", ""),
    ("According to the courier, the parcel was delivered this morning.", "fact", "delivered",
     "human", ""),
    ("工程師回報網路已恢復正常，我們也實際測試過，目前連線正常。", "fact", "連線正常", "pass", ""),
    ("據其他同仁說可以全額退費，我再幫您確認一次。", "forbidden", "全額退費", "notpass", ""),
    ("The technician says the line is fixed, though we haven't verified it yet.", "fact",
     "line is fixed", "human", ""),
    # --- contrast that takes it back ----------------------------------------------------
    ("一般商品都可以七天內退貨，但這款客製化商品不適用。", "fact", "可以七天內退貨", "fail", ""),
    ("Normally we offer free shipping; however, not for this item.", "fact", "free shipping",
     "fail", ""),
    ("Normally we offer free shipping; however, not for this item.", "forbidden",
     "offer free shipping", "pass", ""),
    ("原則上可以刷卡分期，不過這項商品不行。", "forbidden", "刷卡分期", "pass", ""),
    ("原則上可以刷卡分期，不過這項商品不行。", "fact", "可以刷卡分期", "fail", ""),
    ("本來可以當天到貨，但受颱風影響今天無法配送。", "fact", "當天到貨", "fail", ""),
    ("不提供到府安裝，但提供免費運送。", "forbidden", "免費運送", "fail", ""),
    # --- negation scope across a comma ---------------------------------------------------
    ("本店不支援貨到付款，超商取貨付款也一樣。", "forbidden", "超商取貨付款", "pass", ""),
    ("本店不支援貨到付款，超商取貨付款也一樣。", "fact", "超商取貨付款", "fail", ""),
    ("這張卡不能預借現金，分期也是。", "forbidden", "分期", "pass", ""),
    ("We don't accept cash on delivery, and the same goes for bank transfers.", "forbidden",
     "bank transfers", "pass", ""),
    ("We don't offer gift wrapping, and engraving isn't available either.", "forbidden",
     "engraving", "pass", ""),
    ("台北門市可以自取，台中門市也一樣。", "forbidden", "台中門市", "fail", ""),
    ("本方案不含國際漫遊，語音通話也不包含在內。", "forbidden", "語音通話", "pass", ""),
    # --- questions and either/or questions ----------------------------------------------
    ("請問您要退款到信用卡，還是改成購物金？", "forbidden", "退款到信用卡", "notpass", ""),
    ("Would you like the refund to your card or as store credit? Either works.", "forbidden",
     "refund to your card", "fail", ""),
    ("您的訂單已經出貨了嗎？我幫您查一下。", "fact", "已經出貨", "fail", ""),
    ("您是要辦理停話還是直接解約呢？", "forbidden", "解約", "notpass", ""),
    ("Do you want me to cancel the order for you?", "forbidden", "cancel the order", "notpass",
     ""),
    ("您要選擇 3/18 還是 3/20 到貨呢？", "fact", "3/18", "human", ""),
    ("您要我們把退款退到信用卡，還是轉成購物金？兩種都可以。", "forbidden", "退到信用卡", "fail", ""),
    # --- partial matches: a pattern inside a longer word --------------------------------
    ("Sorry, Dr. Lin is fully booked this week.", "fact", "booked", "fail", ""),
    ("Your appointment is booked for Friday at 3pm.", "fact", "booked", "pass", ""),
    ("您的包裹預計 3/18 送達。", "fact", "3/1", "fail", ""),
    ("您的包裹預計 3/1 送達。", "fact", "3/1", "pass", ""),
    ("You can decode the tracking QR code at any 7-Eleven.", "forbidden", "COD", "pass", ""),
    ("We accept COD for orders under NT$3,000.", "forbidden", "COD", "fail", ""),
    ("運費 60 元，滿 1600 元免運。", "fact", "600 元", "fail", ""),
    ("Your refund of $1,250 has been issued.", "fact", "250", "fail", ""),
    ("Your refund of $250 has been issued.", "fact", "250", "pass", ""),
    ("此處方便停車，看診當天可以直接開車過來。", "forbidden", "處方", "pass", ""),
    ("部分期間限定商品恕不退換。", "forbidden", "分期", "pass", ""),
    ("請在 App 內選取消費明細查看。", "fact", "取消", "fail", ""),
    ("我們已收到期限展延的申請，目前審核中。", "fact", "到期", "fail", ""),
    ("您的卡片已經到期，請申請換卡。", "fact", "到期", "pass", ""),
    ("醫師已開立處方，請至櫃檯領藥。", "fact", "處方", "pass", ""),
    ("The Pro plan includes 5G.", "forbidden", "pro", "fail", ""),
    ("Please provide your order number.", "forbidden", "pro", "pass", ""),
    # --- script and format variants -------------------------------------------------------
    ("我们提供货到付款服务。", "forbidden", "提供貨到付款", "fail", ""),
    ("您的订单已经出货了。", "fact", "已經出貨", "pass", ""),
    ("我们可以为您办理全额退款。", "forbidden", "全額退款", "fail", ""),
    ("本店不提供货到付款。", "forbidden", "提供貨到付款", "pass", ""),
    ("退款金額為 NT$2,400，已退回您的信用卡。", "fact", "2400 元", "pass", ""),
    ("退款 2400 元已經退回您的信用卡。", "fact", "NT$2,400", "pass", ""),
    ("退款金額為 2,400元，已退回。", "fact", "2400元", "pass", ""),
    ("本月帳單金額為 NT$24,000。", "fact", "2400 元", "fail", ""),
    ("您的訂單 Ａ１０２９３ 已出貨。", "fact", "A10293 已出貨", "pass", ""),
    ("我们这边可以先帮您免费换新。", "forbidden", "免費換新", "fail", ""),
    ("我們已經為您辦理退款。", "fact", "办理退款", "pass", ""),
    ("您的手续费已经退回到账户。", "fact", "手續費已經退回", "pass", ""),
    ("Your refund of NT$ 2,400 was issued today.", "fact", "2400 元", "pass", ""),
    # --- forbidden under a hedge, inside a quote or a presupposing question --------------
    ("「我們會全額退款」——依照先前的公告，應該會照辦。", "forbidden", "全額退款", "notpass", ""),
    ("或許可以幫您申請延長保固。", "forbidden", "延長保固", "notpass", ""),
    ("Maybe we can waive the late fee this once.", "forbidden", "waive the late fee", "notpass",
     ""),
    ("We can probably waive the late fee.", "forbidden", "waive the late fee", "notpass", ""),
    ("您希望免年費從這期開始，還是從下期開始呢？", "forbidden", "免年費", "notpass", ""),
    # --- the cost side: negation over a list or a whole clause --------------------------
    ("目前沒有任何分期或貨到付款的選項。", "forbidden", "貨到付款", "pass", ""),
    ("目前沒有任何分期或貨到付款的選項。", "forbidden", "分期", "pass", ""),
    ("We don't offer installments, cash on delivery or bank transfer.", "forbidden",
     "bank transfer", "pass", ""),
    ("本帳戶禁止用於投資或代操用途。", "forbidden", "代操", "pass", ""),
    ("此優惠碼禁止用於已折扣商品。", "forbidden", "用於已折扣商品", "pass", ""),
    ("本卡不得用於賭博或虛擬貨幣交易。", "forbidden", "虛擬貨幣交易", "pass", ""),
    ("健保卡不能借給他人使用，也不能用於代領藥品。", "forbidden", "代領藥品", "pass", ""),
    ("本店沒有任何會員折扣或生日禮。", "forbidden", "生日禮", "pass", ""),
    ("門號不提供國際漫遊和國際電話。", "forbidden", "國際電話", "pass", ""),
    ("We offer neither installments nor cash on delivery.", "forbidden", "cash on delivery",
     "pass", ""),
    # --- double negation, instructions, corrections ---------------------------------------
    ("不是不能退，只是需要先寄回商品檢查。", "fact", "能退", "pass", ""),
    ("別忘了帶健保卡和身分證。", "fact", "帶健保卡", "pass", ""),
    ("Don't forget to bring your ID card.", "fact", "bring your id card", "pass", ""),
    ("這次不是退款，而是換貨。", "forbidden", "退款", "pass", ""),
    ("這次不是退款，而是換貨。", "fact", "換貨", "pass", ""),
    ("不是 3 天，而是 7 天內可以退貨。", "fact", "7 天內可以退貨", "pass", ""),
    ("Don't worry, your refund has been issued.", "fact", "refund has been issued", "pass", ""),
    ("請勿忘記在三天內完成繳費。", "fact", "三天內完成繳費", "pass", ""),
    ("It's not a refund but an exchange.", "forbidden", "refund", "pass", ""),
    # --- rhetorical questions that affirm -------------------------------------------------
    ("誰說不行？當然可以幫您退貨！", "forbidden", "可以幫您退貨", "fail", ""),
    ("誰說不能分期？當然可以。", "forbidden", "分期", "fail", ""),
    ("Who says we can't? Of course we can refund it.", "forbidden", "refund it", "fail", ""),
    ("怎麼會不行呢？當然可以幫您加購。", "forbidden", "加購", "fail", ""),
    # --- quoted copy that was withdrawn, a customer's claim the agent denies ---------------
    ("官網舊文案寫的「全館免運」已經下架，目前未滿 1,000 元需付運費。", "forbidden", "全館免運",
     "pass", ""),
    ("您看到的「買一送一」是去年的活動，已經結束了。", "forbidden", "買一送一", "pass", ""),
    ("The banner saying \"free installation\" was withdrawn last month.", "forbidden",
     "free installation", "pass", ""),
    ("您提到客服答應退款，但我們查無此紀錄，無法退款。", "forbidden", "退款", "pass", ""),
    ("You mentioned you were promised a full refund; we have no record of that, so we can't "
     "offer one.", "forbidden", "full refund", "pass", ""),
    ("您說的免年費我們沒有提供喔。", "forbidden", "免年費", "pass", "客服說可以免年費，對吧？"),
    # --- plain assertions stay asserted ---------------------------------------------------
    ("您的退款已於今天完成。", "fact", "退款已於今天完成", "pass", ""),
    ("We've activated international roaming on your line.", "fact",
     "activated international roaming", "pass", ""),
    ("本店提供貨到付款。", "forbidden", "提供貨到付款", "fail", ""),
    ("已經幫您預約 3/18 下午兩點的門診。", "fact", "3/18", "pass", ""),
    ("The clinic is closed on Sundays.", "fact", "closed on sundays", "pass", ""),
    ("您的門號已經開通，可以正常使用了。", "fact", "已經開通", "pass", ""),
    ("Your card has been blocked as requested.", "fact", "card has been blocked", "pass", ""),
    ("可以，已經幫您改成週六配送了。", "fact", "週六配送", "pass", ""),
    ("這筆交易已經完成退款，款項約 3-5 個工作天入帳。", "fact", "完成退款", "pass", ""),
    ("我們可以幫您免除這次的手續費。", "forbidden", "免除這次的手續費", "fail", ""),
)

# Rows the rules still grade wrong, with the reviewer's label (docs/graders.md, "Known limits").
KNOWN_MISSES: tuple[Row, ...] = (
    # a question about a slot the reply proposes, without an offer word (2.3.0: fail, as any
    # question the reply asks; a person would read it as an offer of that slot)
    ("請問明天下午送達方便嗎？", "fact", "明天下午送達", "human", ""),
)


def verdict(row: Row) -> str | None:
    """Grade one row end to end, with the default options of a bank (folding on)."""
    from graders import Question, Reply, grade, normalize, parse_entry

    text, check, pattern, _, customer = row
    entry = (parse_entry(pattern),)
    q = Question(case_no="A", input={"customer_message": customer} if customer else {"q": "?"},
                 facts=entry if check == "fact" else (),
                 forbidden=entry if check == "forbidden" else (), input_text=normalize(customer))
    return grade(q, Reply(text=text)).verdict


def right(expected: str, got: str | None) -> bool:
    if expected == "notpass":
        return got in ("fail", "needs_human")
    return got == {"human": "needs_human"}.get(expected, expected)


def score(rows: tuple[Row, ...] = CASES) -> dict:
    """Rows right, false passes (``pass`` where the label is not), needs_human count, misses."""
    out = {"right": 0, "false_pass": 0, "needs_human": 0, "rows": len(rows), "misses": []}
    for row in rows:
        got = verdict(row)
        out["needs_human"] += got == "needs_human"
        if right(row[3], got):
            out["right"] += 1
        else:
            out["false_pass"] += got == "pass"
            out["misses"].append(f"{row[1]} {row[2]!r} in {row[0]!r}: expected {row[3]}, "
                                 f"got {got}")
    return out


if __name__ == "__main__":  # python tests/graders/assert_cases.py: today's rules on this batch
    s = score()
    print(f"{s['right']}/{s['rows']} right, {s['false_pass']} false passes, "
          f"{s['needs_human']} needs_human")
    print("\n".join(s["misses"]))
