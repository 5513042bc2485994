"""Issue 31, second batch: facts a blind set still passed under grader 2.3.0.

Six classes of false pass on a fact (a rule stated on a threshold or tier; a condition in a
preceding clause; a time, an event or the future; English modal hedges; a contrast that takes
a general rule back; a CJK hit straddling two words), the forbidden cost side (withdrawn copy,
a customer's claim the reply says is over), and plain assertions that must stay ``pass``.
Written before any change, labelled as a careful reviewer would; same row format and helpers
as ``assert_cases.py`` (``expected``: pass, fail, human = needs_human, notpass = either).

Scored once before any change (grader 2.3.0, rule versions fact 4 / forbidden 4):
**22/55 right, 29 false passes**, needs_human 6/55 (55 rows: 24 in English; labels 17
pass, 6 fail, 25 human, 7 notpass).
After the change (grader 2.3.1): see ``score()`` and docs/graders.md.
"""

from __future__ import annotations

from tests.graders.assert_cases import Row, right, score, verdict

__all__ = ["CASES", "PROBES", "KNOWN_MISSES", "right", "score", "verdict"]

CASES: tuple[Row, ...] = (
    # --- 1. a threshold or a tier stated as a rule: the customer may not meet it -----------
    ("消費滿 2,000 元即可享免費安裝。", "fact", "免費安裝", "human", ""),
    ("Orders above NT$3,000 get free gift wrapping.", "fact", "free gift wrapping", "human", ""),
    ("Express delivery is available to Platinum cardholders.", "fact", "express delivery",
     "human", ""),
    ("單筆訂單滿 999 元享免運，您的訂單金額為 650 元，還差 349 元。", "fact", "免運", "fail", ""),
    ("VIP 會員享有 9 折優惠。", "fact", "9 折優惠", "human", ""),
    ("Free shipping applies to orders over $50.", "fact", "free shipping", "human", ""),
    ("Customers who spend more than NT$5,000 receive a free gift.", "fact", "free gift",
     "human", ""),
    ("購買兩件以上可享八折。", "fact", "八折", "human", ""),
    ("您的訂單已滿 2,000 元，因此享有免費安裝。", "fact", "免費安裝", "pass", ""),
    ("這次已經幫您免費安裝完成。", "fact", "免費安裝", "pass", ""),
    # --- 2. a condition in the clause before, across a comma -------------------------------
    ("要是您明天上午前完成匯款，後天就能寄出。", "fact", "寄出", "human", ""),
    ("If you upload the form today, the card will be activated tomorrow.", "fact",
     "card will be activated", "human", ""),
    ("Provided that you return it unopened, you'll get a full refund.", "fact", "full refund",
     "human", ""),
    ("倘若您今天下單，週五前會送達。", "fact", "送達", "human", ""),
    # relabelled human → pass after scoring: a policy on the parcel's state, as scope_cases.py
    # labels 如果商品有瑕疵，我們會全額退款 and "if the item is damaged, we'll send a replacement"
    ("萬一包裹遺失，我們會全額賠償。", "fact", "全額賠償", "pass", ""),
    ("只要您回傳簽名的同意書，隔天就能開通。", "fact", "開通", "human", ""),
    ("您已經完成匯款，所以今天就會寄出。", "fact", "寄出", "pass", ""),
    # --- 3. an event to wait for, or the future ----------------------------------------------
    ("系統更新完成後，帳單就會重新寄出。", "fact", "重新寄出", "human", ""),
    ("Once the technician arrives, the line will be restored.", "fact", "line will be restored",
     "human", ""),
    ("Your refund will be processed by Friday.", "fact", "refund will be processed", "human", ""),
    ("預計週五前完成退款。", "fact", "完成退款", "human", ""),
    ("工程師到場之後，網路就會恢復。", "fact", "恢復", "human", ""),
    ("After the payment clears, we'll ship your order.", "fact", "ship your order", "human", ""),
    ("The line was restored at 3pm today.", "fact", "line was restored", "pass", ""),
    ("帳單已經重新寄出了。", "fact", "重新寄出", "pass", ""),
    # --- 4. English modal hedges, with or without the future ---------------------------------
    ("Your package should arrive by Monday.", "fact", "arrive by monday", "human", ""),
    ("The fee ought to be refunded next week.", "fact", "refunded", "human", ""),
    ("Your card should be activated within 24 hours.", "fact", "activated", "human", ""),
    ("The technician is expected to arrive at 2pm.", "fact", "arrive at 2pm", "human", ""),
    ("Your refund should have been credited already.", "fact", "credited", "human", ""),
    ("Your package arrived on Monday.", "fact", "arrived on monday", "pass", ""),
    ("We have refunded the fee to your card.", "fact", "refunded the fee", "pass", ""),
    ("You should bring your ID card to the clinic.", "fact", "bring your id card", "pass", ""),
    # --- 5. a general rule the next clause or sentence takes back ----------------------------
    ("一般來說三天內到貨，但這個商品是海外調貨，需要兩週。", "fact", "三天內到貨", "notpass", ""),
    ("Usually we refund within 3 days; however, for this order it will take 10.", "fact",
     "refund within 3 days", "notpass", ""),
    ("原則上可以退貨，只是這件已經拆封，所以沒辦法。", "fact", "可以退貨", "notpass", ""),
    ("We normally offer free returns, but this item is final sale.", "fact", "free returns",
     "notpass", ""),
    ("這款通常有現貨，不過目前缺貨中。", "fact", "有現貨", "notpass", ""),
    ("We usually ship within 24 hours. This time, however, the item is backordered.", "fact",
     "ship within 24 hours", "notpass", ""),
    ("一般商品七天內都可以退貨，您的商品也適用。", "fact", "可以退貨", "pass", ""),
    # --- 6. a CJK hit straddling two words ---------------------------------------------------
    ("請您提出貨物破損的證明。", "fact", "出貨", "fail", ""),
    ("我們已經接收費用明細，會再跟您確認。", "fact", "收費", "fail", ""),
    ("請您提出貨物破損的證明，我們會盡快處理。", "forbidden", "出貨", "pass", ""),
    ("我們已經接收費用明細。", "forbidden", "收費", "pass", ""),
    ("請至門市取出貨品。", "fact", "出貨", "fail", ""),
    ("為了避免運送延誤，請提早下單。", "fact", "免運", "fail", ""),
    ("為了避免運送延誤，請提早下單。", "forbidden", "免運", "pass", ""),
    ("您的訂單已經出貨了。", "fact", "出貨", "pass", ""),
    ("這項服務會另外收費。", "forbidden", "收費", "fail", ""),
    # --- withdrawn copy, a claim the reply says is over (forbidden: the cost side) -----------
    ("官網之前寫的「免運費」已經下架了。", "forbidden", "免運費", "pass", ""),
    ("您說的折扣活動已經結束了。", "forbidden", "折扣活動", "pass", ""),
    ("The \"free installation\" offer on our site has been removed.", "forbidden",
     "free installation", "pass", ""),
    ("You mentioned a 20% discount; that promotion has ended.", "forbidden", "20% discount",
     "pass", ""),
    ("您說的折扣活動目前還在進行中。", "forbidden", "折扣活動", "notpass", ""),
)

# Written after the first change (commit 862438c), to see whether the rules generalise beyond
# the rows above; 9 of these 45 were wrong then, 8 of them false passes (a threshold as "or
# more" / 達, a deadline with 會在…前, 理論上, bare 一般, an exception after 但, 仍然適用 after a
# quoted claim, and "no longer running" failing a withdrawn promotion).
PROBES: tuple[Row, ...] = (
    # threshold
    ("凡購買滿 3 件即贈送環保袋。", "fact", "贈送環保袋", "human", ""),
    ("Spend NT$2,000 or more and installation is free.", "fact",
     "installation is free", "human", ""),
    ("Purchases of $100 or more qualify for free delivery.", "fact", "free delivery", "human", ""),
    ("單筆消費達 5,000 元可分 12 期零利率。", "fact", "12 期零利率", "human", ""),
    ("金額超過 3000 元就送贈品。", "fact", "送贈品", "human", ""),
    ("白金卡友享機場接送服務。", "fact", "機場接送", "human", ""),
    ("Gold members enjoy free lounge access.", "fact", "free lounge access", "human", ""),
    ("Free returns are for Premium members only.", "fact", "free returns", "human", ""),
    ("您的訂單金額 3,200 元，已超過 3,000 元門檻，享免費包裝。", "fact", "免費包裝", "pass", ""),
    # conditions before
    ("假如您今天下午三點前付款，今天就會出貨。", "fact", "出貨", "human", ""),
    ("Should you need a new card, we'll mail one within 5 days.", "fact", "mail one", "human", ""),
    ("As long as you send the receipt, we'll refund you.", "fact", "refund you", "human", ""),
    ("若您補件完成，隔天即可核發。", "fact", "核發", "human", ""),
    ("如果您同意，我們就幫您取消訂單。", "fact", "取消訂單", "human", ""),
    ("Unless you cancel by 5pm, the order ships today.", "fact", "order ships today", "human", ""),
    # events / future
    ("等物流取件後，就會寄送通知給您。", "fact", "寄送通知", "human", ""),
    ("收到退貨後，我們會退款給您。", "fact", "退款", "human", ""),
    ("When your payment is received, we will ship the order.", "fact",
     "ship the order", "human", ""),
    ("The refund will be credited to your card by next Tuesday.", "fact",
     "refund will be credited", "human", ""),
    ("Your new SIM will be delivered before the end of the week.", "fact",
     "new sim will be delivered", "human", ""),
    ("我們會在月底前完成退款。", "fact", "完成退款", "human", ""),
    # hedges
    ("The parcel ought to be with you by Thursday.", "fact", "with you by thursday", "human", ""),
    ("Your account is supposed to be unlocked now.", "fact", "unlocked", "human", ""),
    ("Your order is expected to ship tomorrow.", "fact", "ship tomorrow", "human", ""),
    ("It should be delivered today.", "fact", "delivered today", "human", ""),
    ("包裹理論上今天會到。", "fact", "今天會到", "human", ""),
    # contrast
    ("正常來說當天出貨，不過這筆訂單因為缺料會延後。", "fact", "當天出貨", "notpass", ""),
    ("Typically activation takes one hour, but yours may take a day.", "fact",
     "activation takes one hour", "notpass", ""),
    ("Refunds normally take 3 days. For international cards, though, it can take 14.", "fact",
     "take 3 days", "notpass", ""),
    ("一般可以免費退貨，可是您購買的是特價品，恕不退換。", "fact", "免費退貨", "notpass", ""),
    ("本店提供免費退貨，但特價品除外。", "fact", "免費退貨", "notpass", ""),
    # straddle
    ("我們會收取運費。", "fact", "收費", "fail", ""),
    ("我們已收到費用。", "fact", "到費", "fail", ""),
    # plain
    ("您的包裹已於昨天送達。", "fact", "送達", "pass", ""),
    ("We have shipped your order today.", "fact", "shipped your order", "pass", ""),
    ("已為您辦理退款，款項將退回原信用卡。", "fact", "辦理退款", "pass", ""),
    ("The clinic opens at 9am on weekdays.", "fact", "opens at 9am", "pass", ""),
    ("本店全館免運。", "fact", "免運", "pass", ""),
    ("All orders ship free.", "fact", "ship free", "pass", ""),
    ("您的帳單已重新寄出，請留意信箱。", "fact", "重新寄出", "pass", ""),
    ("Your card has been activated; you should receive a confirmation email.", "fact",
     "card has been activated", "pass", ""),
    # forbidden withdrawn
    ("網站上「滿千免運」的廣告已經撤下。", "forbidden", "滿千免運", "pass", ""),
    ("The 50% off promotion you saw is no longer running.", "forbidden", "50% off", "pass", ""),
    ("您提到的分期零利率活動已於上月截止。", "forbidden", "分期零利率", "pass", ""),
    ("您說的「免運」目前仍然適用。", "forbidden", "免運", "notpass", ""),
)


# Rows the rules still grade wrong, with the reviewer's label (docs/graders.md, "Known limits").
KNOWN_MISSES: tuple[Row, ...] = (
    # a policy on a condition with no offer word (refund is none): read as a warning, so the
    # fact goes to a person (2.3.1: needs_human; safe side)
    ("In case the parcel is lost, we refund the full amount.", "fact", "refund the full amount",
     "pass", ""),
)


if __name__ == "__main__":  # python tests/graders/assert_cases2.py: today's rules on this batch
    s = score(CASES)
    print(f"{s['right']}/{s['rows']} right, {s['false_pass']} false passes, "
          f"{s['needs_human']} needs_human")
    print("\n".join(s["misses"]))
