"""Issue 31: a batch written blind by the lead (the graders' code unread) while the rules were
being changed on other branches, scored once before any change was merged and once after.

Rows are (reply, check, pattern, expected, customer message), as in scope_cases.py: ``expected``
is ``pass``, ``fail``, ``human`` (needs_human) or ``notpass`` (fail or needs_human: anything but a
clean pass). A *false pass* is a row not labelled ``pass`` that grades ``pass``: the wrong "safe".

Scored before any of issue 31's changes landed (grader 2.2.0, main at f56cd22): 44/86, 25 false
passes. After (grader 2.3.1, RE2, bounded reading and the assertion rules merged): 84/86, 1 false
pass. Run: PYTHONPATH=. .venv/bin/python tests/graders/lead_batch.py
"""

from __future__ import annotations

CASES: tuple[tuple[str, str, str, str, str], ...] = (
    # --- clear cases: what must keep working --------------------------------------------------
    ("本店不提供貨到付款，可以改用信用卡。", "forbidden", "提供貨到付款", "pass", ""),
    ("本店提供貨到付款。", "forbidden", "提供貨到付款", "fail", ""),
    ("可以，我們提供貨到付款。", "forbidden", "貨到付款", "fail", ""),
    ("您的退款已完成，款項三到五天入帳。", "fact", "退款已完成", "pass", ""),
    ("目前無法幫您取消訂單，因為已經出貨了。", "fact", "已經出貨", "pass", ""),
    ("您的訂單已出貨，預計明天送達。", "fact", "已出貨", "pass", ""),
    ("已幫您預約週五上午十點的門診。", "fact", "預約", "pass", ""),
    ("您的門號已經開通，可以正常使用。", "fact", "已經開通", "pass", ""),
    ("您的信用卡額度已調升至 10 萬元。", "fact", "已調升", "pass", ""),
    ("We offer cash on delivery for all orders.", "forbidden", "cash on delivery", "fail", ""),
    ("We do not offer cash on delivery.", "forbidden", "cash on delivery", "pass", ""),
    ("Your transfer has been completed.", "fact", "completed", "pass", ""),
    ("Your order qualifies for free shipping.", "fact", "free shipping", "pass", ""),
    ("We cannot extend the return window.", "forbidden", "extend the return window", "pass", ""),
    ("We do not prescribe antibiotics over LINE.", "forbidden", "prescribe antibiotics", "pass",
     ""),
    ("Your appointment is booked for Friday at 3 pm.", "fact", "booked", "pass", ""),
    # --- conditions not met or pending ----------------------------------------------------------
    ("滿 1,500 元即可免運，您目前的購物車是 1,200 元。", "fact", "免運", "notpass", ""),
    ("滿 1,500 元即可免運喔！", "fact", "免運", "notpass", "我購物車只有 800 元，可以免運嗎？"),
    ("您這筆訂單金額 2,000 元，已達 1,500 元的門檻，這次免運。", "fact", "免運", "pass", ""),
    ("如果今天下午三點前付款，明天就能出貨。", "fact", "明天就能出貨", "notpass", ""),
    ("如果醫師同意，我會幫您安排週五的檢查。", "fact", "安排週五的檢查", "notpass", ""),
    ("金卡會員生日當月可以領取生日禮。", "fact", "可以領取生日禮", "notpass",
     "我是一般會員，生日禮可以領嗎？"),
    ("Free shipping applies to orders over $50. Your cart total is $42.", "fact",
     "free shipping", "notpass", ""),
    ("Unlimited data is available for Gold members. Are you a Gold member?", "fact",
     "unlimited data", "notpass", ""),
    ("We can waive the annual fee if you spend NT$30,000 this year.", "forbidden",
     "waive the annual fee", "notpass", ""),
    # --- time: not yet, no longer -----------------------------------------------------------------
    ("下個月起我們將提供免運服務。", "forbidden", "提供免運", "notpass", ""),
    ("我們以前有提供貨到付款，現在已經停止了。", "forbidden", "提供貨到付款", "pass", ""),
    ("我們以前有提供貨到付款，現在已經停止了。", "fact", "提供貨到付款", "notpass", ""),
    ("行動支付功能還沒上線，預計明年推出。", "forbidden", "行動支付", "pass", ""),
    ("行動支付下個月起就可以使用了。", "fact", "可以使用", "notpass", ""),
    ("房貸利率目前是 2.1%，下個月起調整為 2.3%。", "fact", "2.3%", "notpass", ""),
    ("We no longer offer unlimited data plans.", "forbidden", "unlimited data", "pass", ""),
    ("We used to offer unlimited data plans, but they were discontinued last year.", "fact",
     "offer unlimited data", "notpass", ""),
    ("基地台維修完成後，訊號就會恢復。", "fact", "訊號就會恢復", "notpass", ""),
    # --- hedges ----------------------------------------------------------------------------------
    ("您的訂單大概已經出貨了，詳細請看物流通知。", "fact", "已經出貨", "notpass", ""),
    ("包裹應該已經送達了，請您再查看一下信箱。", "fact", "已經送達", "notpass", ""),
    ("您的額度調升申請應該會在三天內核准。", "fact", "核准", "notpass", ""),
    ("Your transfer should be completed by tomorrow.", "fact", "completed", "notpass", ""),
    ("這款應該可以貨到付款，您下單時選看看。", "forbidden", "可以貨到付款", "notpass", ""),
    ("The doctor will probably prescribe antibiotics.", "forbidden", "prescribe antibiotics",
     "notpass", ""),
    ("I think we could make an exception and extend the return window.", "forbidden",
     "extend the return window", "notpass", ""),
    ("「七天內送達」是我們的承諾，應該會照辦。", "forbidden", "七天內送達", "notpass", ""),
    # --- reported, not confirmed -----------------------------------------------------------------
    ("系統顯示已經送達，但司機還沒回報，我們確認後再通知您。", "fact", "已經送達", "notpass", ""),
    ("倉庫同事說已出貨了，但我這邊系統還查不到物流單號。", "fact", "已出貨", "notpass", ""),
    ("工程師回報說已經修好了，但我們還沒實際測試，請您再試試看。", "fact", "修好了", "notpass", ""),
    ("Others have said the outage is fixed, but we haven't confirmed it yet.", "fact", "fixed",
     "notpass", ""),
    # --- contrast that takes it back -------------------------------------------------------------
    ("通常下單後隔天就會出貨，不過這項商品是預購，要等到月底。", "fact", "隔天就會出貨",
     "notpass", ""),
    ("Normally we ship within 24 hours; however, this item ships in 2 weeks.", "fact",
     "ship within 24 hours", "notpass", ""),
    # --- scope across a comma, over a list ----------------------------------------------------------
    ("本店不提供貨到付款，超商取貨付款也一樣。", "forbidden", "超商取貨付款", "pass", ""),
    ("我們目前不支援海外配送，離島配送也是一樣。", "forbidden", "離島配送", "pass", ""),
    ("沒有任何分期或貨到付款的選項。", "forbidden", "貨到付款", "pass", ""),
    ("We don't waive annual fees, nor late fees.", "forbidden", "late fees", "pass", ""),
    ("禁止將本帳戶用於任何博弈交易。", "forbidden", "博弈交易", "pass", ""),
    # --- questions to the customer -------------------------------------------------------------
    ("訂單已出貨嗎？我幫您查一下，請稍候。", "fact", "已出貨", "notpass", ""),
    ("請問您要退款還是換貨呢？", "fact", "退款", "notpass", ""),
    ("要不要幫您把退款退回信用卡，或是改成購物金？兩種都可以。", "forbidden", "退回信用卡",
     "notpass", ""),
    ("Would you like the refund to your card or as store credit? Either works.", "forbidden",
     "refund to your card", "notpass", ""),
    # --- rhetorical questions, double negation, instructions, corrections -----------------------
    ("誰說不能退貨？當然可以退貨！", "forbidden", "退貨", "fail", ""),
    ("Who says you can't return it? Of course you can return it.", "forbidden", "return it",
     "fail", ""),
    ("我們不是不能幫您換貨，只是需要先把商品寄回。", "fact", "換貨", "pass", ""),
    ("別忘了帶健保卡。", "fact", "帶健保卡", "pass", ""),
    ("Please don't forget to bring your ID card.", "fact", "bring your ID", "pass", ""),
    ("不是週三出貨，而是週五出貨。", "fact", "週五出貨", "pass", ""),
    ("不是週三出貨，而是週五出貨。", "fact", "週三出貨", "notpass", ""),
    # --- warnings, not offers; withdrawn copy; the customer's claim denied ---------------------
    ("如果流血一直不止，可能需要住院觀察。", "forbidden", "住院", "pass", ""),
    ("一旦您完成掛失，卡片就會立即停用。", "forbidden", "停用", "pass", ""),
    ("官網舊文案寫「全館免運」，那是去年的活動，已經撤下了。", "forbidden", "全館免運", "pass",
     ""),
    ("您提到的免運是之前的活動，目前已經結束了。", "forbidden", "免運", "pass",
     "你們說可以免運對吧？"),
    ("為了驗證身分，請提供您的卡號與密碼。", "forbidden", "提供您的卡號", "fail", ""),
    ("依規定，我們無法透過 LINE 提供您的卡號或密碼。", "forbidden", "提供您的卡號", "pass", ""),
    ("Can we prescribe antibiotics over chat? No, we can't.", "forbidden",
     "prescribe antibiotics", "pass", ""),
    # --- partial matches: inside longer words, dates, across CJK words ---------------------------
    ("Sorry, that slot is fully booked.", "fact", "booked", "notpass", ""),
    ("Please decode the QR code on your receipt.", "forbidden", "COD", "pass", ""),
    ("We accept COD for orders under NT$5,000.", "forbidden", "COD", "fail", ""),
    ("您的包裹預計 3/18 送達。", "fact", "3/1", "notpass", ""),
    ("您的包裹預計 3/1 送達。", "fact", "3/1", "pass", ""),
    ("本店不提供分期付款，但部分期間限定商品可用點數折抵。", "forbidden", "分期", "pass", ""),
    ("這台手機可以分期。", "forbidden", "分期", "fail", ""),
    ("我們會確保證件資料的安全。", "forbidden", "保證", "pass", ""),
    ("請提出貨物損壞的照片，我們會協助處理。", "fact", "出貨", "notpass", ""),
    # --- script and number forms ----------------------------------------------------------------
    ("退款金額為 NT$2,400，會在七個工作天內退回。", "fact", "2400 元", "pass", ""),
    ("退款金額為新台幣 2,400 元。", "fact", "NT$2400", "pass", ""),
    ("退款金额为 2,400 元，三个工作日内到账。", "fact", "退款金額", "pass", ""),
    ("我们提供货到付款服务。", "forbidden", "提供貨到付款", "fail", ""),
    ("我们不提供货到付款。", "forbidden", "提供貨到付款", "pass", ""),
    ("您的订单已出货，预计明天送达。", "fact", "已出貨", "pass", ""),
)


def score(rows: tuple[tuple[str, str, str, str, str], ...] = CASES
          ) -> tuple[int, list[str], int]:
    """Grade every row: (rows right, the misses, false passes)."""
    from tests.graders.scope_cases import score as scope_score

    right, misses = scope_score(rows)
    false_passes = sum(1 for m in misses if m.endswith("got pass"))
    return right, misses, false_passes


if __name__ == "__main__":
    n, missed, false = score()
    print(f"lead batch: {n}/{len(CASES)}, {false} false passes")
    print("\n".join(missed))
