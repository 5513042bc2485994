"""The lexicon of the scope model (docs/graders.md, "The scope model").

Cues are *words*: the scanner takes the longest cue at each position, so a word that merely
contains a negating character (特別, 毫不猶豫地, 免費, 未滿, 沒錯) is read as the word it is.
All cues are in normalised form (NFKC, casefolded); Chinese cues are given in Traditional and
Simplified, and every list holds the folded form of each of its words too (replies are folded
before they are read: 核准 is read 核準; tests/graders/test_normalize.py keeps that true).
"""

from __future__ import annotations

# Negators: each word counts once (並非 is one negation, 並非不 two).
NEGATION_ZH = (
    "不", "沒", "没", "無", "无", "未", "非", "別", "别", "勿", "莫", "否", "毋", "甭", "免",
    "並非", "并非", "並不", "并不", "並未", "并未", "並沒有", "并没有", "並沒", "并没", "絕非", "绝非",
    "不是", "沒有", "没有", "無法", "无法", "不能", "不可", "不可以", "不會", "不会", "不再",
    "尚未", "還沒", "还没", "還沒有", "还没有", "從未", "从未", "從不", "从不", "絕不", "绝不",
    "決不", "决不", "不得", "不足", "不需", "不需要", "不用", "無須", "无须", "無需", "无需",
    "毋須", "毋须", "毫不", "毫無", "毫无", "缺乏", "缺少", "欠缺", "禁止", "拒絕", "拒绝",
    "停止", "暫停", "暂停", "取消了", "不行", "沒辦法", "没办法", "沒有辦法", "没有办法",
    "不可能", "辦不到", "办不到", "做不到", "辦不了", "办不了", "做不了", "來不及", "来不及",
    "不到", "不了", "恕不", "不予", "無從", "无从", "難以", "难以",
    # negators that begin like a pseudo-negation below (不適 discomfort, 不同 different...)
    "不適用", "不适用", "不適合", "不适合", "不同意", "不便宜", "不滿意", "不满意",
    # refusing, and the Cantonese negators of Hong Kong replies (冇提供, 唔得)
    "謝絕", "谢绝", "婉拒", "恕難", "恕难", "不必", "冇", "唔",
)
NEGATION_EN = (
    "not", "no", "never", "cannot", "can't", "can’t", "cant", "don't", "don’t", "dont",
    "doesn't", "doesn’t", "didn't", "didn’t", "won't", "won’t", "isn't", "isn’t",
    "aren't", "aren’t", "wasn't", "wasn’t", "weren't", "weren’t", "shouldn't", "couldn't",
    "wouldn't", "haven't", "hasn't", "hadn't", "mustn't", "neither", "nor", "without",
    "unable", "none", "nothing", "nobody", "lack", "lacks", "lacking", "no longer", "not yet",
    "impossible", "unavailable",
    # refusing, failing, stopping: "we declined to refund", "has been discontinued"
    "refuse", "refuses", "refused", "refusing", "decline to", "declines to", "declined to",
    "fail to", "fails to", "failed to", "failing to", "discontinue", "discontinued",
    "stopped", "ceased", "suspended", "halted",
)
# "No need to X" negators: the modal of a claim after them (無需申請即可使用, 不用先付款可以
# 直接…) is the reply's own predicate, out of their scope; 沒有任何商品可以… is not one of them.
NEED_NEGATION = (
    "不需要", "不需", "不用", "不必", "無需", "无需", "無須", "无须", "毋須", "毋须", "免",
)
MODAL_ZH = ("可以", "即可", "便可", "皆可", "均可", "都可", "能夠", "能够", "都能", "就能")
# A bare prefix negator followed, in the same scope, by another negator forms a word with
# its noun (非會員, 未開封商品, 無糖) and does not negate the predicate: 非會員無法折抵.
WORD_PREFIX_NEGATION = ("非", "無", "无", "未", "沒", "没", "免")
# A negator that takes a whole clause, subject included: "it's not that we won't…",
# 並不是我們不提供… The subject after it does not end its scope.
CLAUSAL_NEGATION = (
    "not that", "it's not that", "it’s not that", "不是說", "不是说", "並不是說", "并不是说",
    "倒不是", "並不是", "并不是", "也不是說", "no reason", "no reason why", "沒有理由", "没有理由",
    "沒有道理", "没有道理",
    "no way", "never said", "didn't say", "didn’t say", "did not say", "never claimed",
    "沒有說", "没有说", "沒說", "没说", "並沒有說", "并没有说", "從沒說", "从没说",
    "not true that", "isn't true that", "isn’t true that", "not the case that",
    "isn't the case that", "isn’t the case that",
    # a report made in error: what it reported is not so (系統誤顯示已出貨, "we mistakenly told
    # you the refund was issued"); "mistakenly shipped" is not one: the shipping happened
    "誤顯示", "误显示", "錯誤顯示", "错误显示", "誤植", "误植", "誤標", "误标", "誤報", "误报",
    "誤傳", "误传", "誤告知", "误告知", "誤通知", "误通知", "錯誤通知", "错误通知",
    "mistakenly told", "mistakenly said", "mistakenly marked", "mistakenly showed",
    "incorrectly marked", "incorrectly showed", "incorrectly shown", "incorrectly told",
    "wrongly told", "erroneously marked",
    # a rhetorical question denies what it asks (怎麼可能提供…); with a negator it asserts
    "怎麼可能", "怎么可能", "難道", "难道", "哪有", "何嘗", "何尝", "豈", "岂",
)
# A negated quantifier says some do and some do not ("not every store offers pickup",
# 不是每一款都可以退貨): the reply asserts the hit for some; a person reads it (``unclear``).
PARTIAL_NEGATION = (
    "not every", "not all", "not always", "not necessarily", "不是每", "不是所有", "並非所有",
    "并非所有", "並非每", "并非每", "並不是每", "并不是每", "並不是所有", "并不是所有", "不一定",
    "未必", "不見得", "不见得",
)
# After the hit, a predicate of ending is its verdict: 九折優惠已經結束了 (before the hit,
# 活動結束後寄出 negates nothing); not after a modal (訂單可以取消, orders can be cancelled)
# nor under a negator, which then governs it (無法關閉). Not 取消 / cancelled: 訂單 A10305
# 已取消 reports the order's state; the order is not denied.
ENDING_ZH = (
    "結束", "结束", "截止", "下架", "停售", "停產", "停产", "停辦", "停办", "失效", "過期", "过期",
    "終止", "终止", "中止", "尚無", "尚无", "關閉", "关闭", "停用", "撤銷", "撤销",
    # English participles of ending: "cash on delivery was paused until further notice"
    "paused", "withdrawn", "ended", "terminated", "expired",
    # a report called wrong after it: 已退款的訊息有誤, "marked as shipped by mistake"
    "有誤", "有误", "是錯的", "是错的", "錯誤", "错误", "不實", "不实", "by mistake", "in error",
    "mistaken", "incorrect", "untrue",
)

# Verbs of cancelling count only right after a negator, which they turn back (我們並沒有取消
# 貨到付款, we haven't cancelled it: double negation). Alone they report a state (訂單 A10305
# 已取消) or an action (幫您取消訂單), not that the thing after them is absent.
CANCEL_ZH = ("取消", "停掉", "撤掉")
CANCEL_EN = ("cancel", "cancelled", "canceled", "stop")

# Words that contain a negating character and negate nothing the reply offers: pseudo-
# negations, fixed phrases, quantities (未滿 = below), "free of charge" (the thing priced is
# offered), and nouns (特別, 個別, 不便).
PSEUDO_NEGATION_ZH = (
    "非常", "不僅", "不仅", "不只", "不但", "不單", "不单", "沒問題", "没问题", "沒有問題",
    "没有问题", "不論", "不论", "無論", "无论", "不管", "沒關係", "没关系", "沒關系", "不客氣", "不客气",
    "不好意思", "不用擔心", "不用担心", "別擔心", "别担心", "不錯", "不错", "不少", "不久",
    "不斷", "不断", "不同", "未來", "未来", "無限", "无限", "不得不", "非得", "無不", "无不",
    "莫不", "不妨", "無比", "无比", "不禁", "非凡", "無誤", "无误", "無缺", "无缺",
    "沒錯", "没错", "沒事", "没事", "不便", "不適", "不适", "不定期", "不時", "不时",
    "未滿", "未满", "不滿", "不满", "不超過", "不超过", "未超過", "未超过", "不到一",
    "難免", "难免", "未免", "免不了", "不免",
    # without limit: the thing limited is offered (不限金額都可以…)
    "不限", "不限於", "不限于", "不受限", "唔該", "唔该", "唔好意思",
    "特別", "特别", "個別", "个别", "分別", "分别", "區別", "区别", "類別", "类别", "差別",
    "差别", "性別", "性别", "級別", "级别", "識別", "识别", "別人", "别人", "別的", "别的",
    "是非", "無線", "无线", "沒想到", "没想到", "不用客氣", "不用客气", "不要客氣", "不要客气",
    # words that hold 時, which would otherwise open a time clause (see SCOPE_TIME_ZH)
    "暫時", "暂时", "準時", "准时", "及時", "及时", "即時", "即时", "隨時", "随时", "小時", "小时",
    "時間", "时间", "按時", "按时", "有時", "有时", "當時", "当时", "平時", "平时", "臨時", "临时",
    "時段", "时段", "時效", "时效", "屆時", "届时", "時程", "时程",
    # free of charge: the thing priced is offered
    "免費", "免费", "免運", "免运", "免付費", "免付费", "免手續費", "免手续费", "不另收費",
    "不另收费", "不另外收費", "不另外收费", "不額外收費", "不额外收费", "不收費", "不收费",
    "不用錢", "不用钱", "不加價", "不加价", "不需付費", "不需付费", "不用付費", "不用付费",
    "無需付費", "无需付费", "無須付費", "无须付费", "沒有額外費用", "没有额外费用", "無額外費用",
    "无额外费用", "不收取費用", "不收取费用", "不另計費", "不另计费", "不加收", "不另收",
    "不另外收", "不用額外", "不用额外", "不需額外", "不需额外",
    # a concession or a choice, not a question: 無論是否為會員都可以…
    "無論是否", "无论是否", "不論是否", "不论是否", "不管是否", "無論能否", "无论能否",
    "不論能否", "不论能否", "不管能否",
    # nouns that hold 地/的, which would otherwise close a modifier (see SCOPE_MODIFIER_ZH)
    "地址", "地區", "地区", "地點", "地点", "地方", "當地", "当地", "各地", "外地", "本地",
    "產地", "产地", "場地", "场地", "目的地", "土地", "地圖", "地图", "地下", "地上", "地板",
    "目的", "的確", "的确", "您的", "你的", "妳的", "我的", "我們的", "我们的", "他的", "她的",
    "貴公司的", "贵公司的", "本店的",
    # instructions: 別忘了帶健保卡 asks the customer to bring it
    "別忘了", "别忘了", "別忘記", "别忘记", "不要忘了", "不要忘記", "不要忘记", "請勿忘記", "请勿忘记",
    "勿忘", "切勿忘記", "切勿忘记",
    # words that hold 說 or 表示 (see HEARSAY_ZH)
    "說明", "说明", "跟您說", "跟您说", "和您說", "和您说", "這表示", "这表示", "也就是說", "也就是说",
    "換句話說", "换句话说", "老實說", "老实说", "比如說", "比如说", "小說", "小说",
)
PSEUDO_NEGATION_EN = (
    "not only", "no problem", "no worries", "not just", "no doubt", "nothing but",
    "not to mention", "no matter", "none other than", "no later than", "not later than",
    "no more than", "not more than", "no less than", "can't wait", "can’t wait", "cannot wait",
    "won't be long", "won’t be long", "never mind", "don't hesitate", "don’t hesitate",
    "do not hesitate", "not a problem", "no need to worry",
    # free of charge: the thing priced is offered ("no extra charge for gift wrapping")
    "no charge", "no extra charge", "no additional charge", "no fee", "no extra fee",
    "no additional fee", "no cost", "no extra cost", "no additional cost", "at no cost",
    "at no extra cost", "at no additional cost", "free of charge", "without charge",
    "without extra charge", "without any charge", "without additional cost", "no surcharge",
    "don't charge", "do not charge", "doesn't charge", "does not charge", "won't charge",
    "will not charge", "never charge", "don't charge extra", "doesn't cost", "does not cost",
    "won't cost", "will not cost", "regardless of whether",
    # instructions: "don't forget to bring your ID" asks the customer to bring it
    "don't forget", "don’t forget", "do not forget", "never forget",
)

# A negator governing a price or fee makes the thing priced free, not absent ("there isn't
# any fee to cancel", 不收運費提供貨到付款): the words that may follow it, then the fee.
COST_LEAD_EN = ("any", "extra", "additional", "hidden", "a", "an", "the", "other", "separate",
                "have", "be", "is", "real", "at", "all")
# A problem the negator denies makes the hit fine, on either side (貨到付款一點問題都沒有,
# 貨到付款完全不是問題, 不成問題, "X is never a problem").
PROBLEM_ZH = ("問題", "问题", "困難", "困难", "麻煩", "麻烦", "障礙", "障碍")
PROBLEM_EN = ("problem", "problems", "issue", "issues", "trouble", "difficulty", "difficulties",
              "hassle", "worry", "worries", "obstacle")
COST_EN = ("fee", "fees", "charge", "charges", "cost", "costs", "surcharge", "penalty",
           "penalties", "minimum", "minimums", "deposit", "deposits", "limit", "limits",
           "restriction", "restrictions", "prepayment",
           # a problem, or a verb of hindering: "no trouble paying cash on delivery", "nothing
           # wrong with…", "we don't mind…", "nothing prevents you from…"
           *PROBLEM_EN, "wrong", "mind", "prevents", "prevent", "stops")
COST_LEAD_ZH = ("收取", "另外", "另收", "加收", "額外", "额外", "任何", "收", "另", "多", "再", "付",
                "成", "會有", "会有", "有", "是")
COST_ZH = ("費用", "费用", "收費", "收费", "手續費", "手续费", "運費", "运费", "服務費", "服务费",
           "錢", "钱", "費", "费", "限制", "門檻", "门槛", "訂金", "订金", "押金", "最低消費",
           "最低消费", "低消", *PROBLEM_ZH)

# Questions and reported questions: the clause asks, it does not assert.
INTERROGATIVE_ZH = (
    "是否", "能否", "可否", "有沒有", "有没有", "是不是", "會不會", "会不会", "可不可以",
    "能不能", "要不要", "有無", "有无", "請問", "请问", "詢問", "询问", "您問", "您问",
    "你問", "你问", "問到", "问到", "想知道", "想了解", "確認是否", "确认是否", "與否", "与否",
)
INTERROGATIVE_EN = ("whether", "ask", "asked", "asking", "asks", "wonder", "wondering", "inquire")
QUESTION_SUFFIX = ("嗎", "吗", "與否", "与否")
# A concession before a question word makes it no question: 不管有沒有會員都可以…
CONCESSIVE = ("無論", "无论", "不論", "不论", "不管", "regardless of", "no matter")

# Reported speech: the customer's words, repeated; they assert nothing (quoted).
REPORTED_ZH = (
    "您提到", "你提到", "您說", "您说", "你說", "你说", "您表示", "您反映", "您反應", "您提及",
    "您所說", "您所说", "您告知", "據您所說", "据您所说", "您認為", "您认为", "您以為", "您以为",
)
REPORTED_EN = (
    "you said", "you mentioned", "you wrote", "you told us", "you were told", "you say",
    "you mention", "according to you", "you believe", "you thought",
)
# A topic named for what follows (關於您詢問的分期付款，…) is mentioned, not claimed.
TOPIC_ZH = ("關於", "关于", "有關", "有关", "針對", "针对")
# ... or named before a comma by a topic ending (貨到付款的部分，很抱歉沒有辦法提供).
TOPIC_SUFFIX_ZH = ("的部分", "的部份", "這部分", "这部分", "這部份", "方面", "的話題", "的话题",
                   "这块", "這塊")
TOPIC_EN = ("regarding", "concerning", "as for", "as to", "with regard to", "in regard to")

HYPOTHETICAL_ZH = (
    "如果", "假如", "假設", "假设", "若", "要是", "倘若", "萬一", "万一", "除非", "一旦", "假使",
)
# "As long as" offers what it names: 只要選擇貨到付款，我們就會通知您 presupposes it; only a
# consequent after it (只要未拆封都可以退貨) is read apart from the condition's negators.
SUFFICIENT_ZH = ("只要",)
HYPOTHETICAL_EN = ("if", "unless", "suppose", "supposing", "in case", "assuming")
HYPOTHETICAL_SUFFIX = ("的話", "的话")

# Scope breaks, by how far they reach:
# - a contrast, a coordination or a consequence ends every scope, on both sides of the hit;
SCOPE_BREAK_ZH = (
    "但", "但是", "不過", "不过", "然而", "可是", "只是", "卻", "却", "而是",
    "還", "还", "並且", "并且", "而且", "同時", "同时", "另外", "此外", "以及",
    "所以", "因此", "因而", "否則", "否则", "不然", "就", "便", "則", "则", "才",
)
SCOPE_BREAK_EN = (
    "but", "however", "though", "although", "whereas", "instead", "also", "so", "therefore",
    "then", "otherwise",
)
# - a cause ends a negation before the hit (不用先匯款因為可以貨到付款); after the hit it
#   sits inside the clause (貨到付款因為風險太高不提供) and ends nothing;
SCOPE_CAUSE_ZH = ("因為", "因为", "由於", "由于")
# - so does "still" (不能刷卡還是可以…), which after the hit is an adverb of the verdict
#   (貨到付款我們還是沒有開放);
SCOPE_STILL_ZH = ("還是", "还是", "仍然", "依然", "照樣", "照样")
# - a dash: it ends a negation before the hit (No need to prepay — cash on delivery is
#   available); after the hit it ends one that came before it ("X is unavailable — it's
#   just…") and lets one after it be the verdict ("Cash on delivery — not available").
DASH = ("—", "–")
SCOPE_CAUSE_EN = ("because", "since")
# - 也 / and coordinate: they end a negation before the hit (不提供宅配也提供自取), but after
#   the hit they may share the predicate (明天出貨也不是不可能; X and Y aren't offered);
COORDINATION_ZH = ("也",)
COORDINATION_EN = ("and",)
# - a new subject ends a negation before the hit, unless it directly follows a negator
#   (並不是我們不提供: the subject is inside the negated clause); after the hit a subject is
#   the commenter of a topic (刷卡分期我們這邊辦不到) and ends nothing;
SCOPE_SUBJECT_ZH = ("我們", "我们", "本店", "他們", "他们", "公司", "店家")
SCOPE_SUBJECT_EN = ("we", "they")
# - a closed modifier holds its negator: 未開封的商品, 毫不猶豫地推薦. It ends a negation
#   before the hit; after the hit (延長保固的部分目前無法提供) the modified noun is the topic.
SCOPE_MODIFIER_ZH = ("的", "地")
# - a time clause holds its negator too (沒有庫存時我們提供), and after the hit it ends the
#   clause the hit belongs to (出貨時不會另行通知).
SCOPE_TIME_ZH = ("時", "时", "時候", "时候", "之後", "之后", "以後", "以后")
SCOPE_TIME_EN = ("when", "after", "once")
# - a relative clause after the hit is about something else ("gift wrapping, which…").
SCOPE_RELATIVE_EN = ("that", "which", "who")

# After the hit, a negated predicate governs the hit only when it is the clause's verdict on
# it: nothing left after the negator, or one of these predicates of availability,
# possibility or permission (X目前沒有開放, X是不太可能的, X isn't offered).
GOVERNING_ZH = (
    "開放", "开放", "提供", "支援", "支持", "接受", "受理", "適用", "适用", "包含", "包括",
    # what is launched, switched on or done: 貨到付款還沒上線, 退款尚未完成, 暫時無法使用
    "使用", "上線", "上线", "推出", "開通", "开通", "啟用", "启用", "生效", "完成",
    "可能", "可行", "行", "允許", "允许", "成立", "存在", "供應", "供应", "販售", "贩售", "販賣",
    "贩卖", "賣", "卖", "實施", "实施", "辦理", "办理", "處理", "处理", "對", "对", "正確", "正确",
    "一定", "確定", "确定", "能", "會", "会", "可以", "得", "到", "保證", "保证", "承諾", "承诺",
    "安排", "配合", "通融", "服務", "服务", "做", "辦", "办", "了", "有", "規劃", "规划",
    "計畫", "计划", "計劃", "打算", "選項", "选项", "方案",
)
# A copula negator after the hit whose tail is no verdict says what the hit is not (貨到付款
# 並非本店提供的付款方式): whether that denies it is for a person (``unclear``).
COPULA_NEGATION = ("不是", "並非", "并非", "並不是", "并不是", "絕非", "绝非", "非")
# Degree adverbs and the copula that may sit between the negator and that predicate.
GOVERNING_SKIP_ZH = ("太", "很", "大", "再", "是", "一定", "目前", "暫時", "暂时", "再")
# Sentence-final particles and a locative tail that do not change the predicate.
PARTICLES_ZH = "的了喔哦唷呢啦耶囉呦呀啊哩嘛吧 "
LOCATIVE_ZH = ("在", "於", "于", "給", "给")
GOVERNING_EN = (
    "offered", "available", "possible", "supported", "allowed", "permitted", "accepted",
    "provided", "included", "covered", "eligible", "applicable", "apply", "applies", "option",
    "something", "done", "arranged", "guaranteed", "feasible", "work", "happen", "allow",
    "accept", "offer", "provide", "support", "include", "cover", "do", "ready", "open",
    # irregular past participles: "price adjustments are not given after purchase"
    "given", "taken", "shown", "sent", "made", "paid", "sold", "held", "kept", "built",
    "bought", "brought", "seen", "known", "found", "granted", "issued", "refunded", "shipped",
    "gone", "come", "begun", "gotten", "got",
    # a promotion or offer that is not on (2.3.1): "that promotion is no longer running"
    "running", "active", "valid", "live", "on",
)
# After the hit, 不在…範圍內 excludes it: the place words that make 在 a verdict.
EXCLUDED_ZH = ("範圍內", "范围内", "範圍", "范围", "之列", "之內", "之内")
GOVERNING_SKIP_EN = (
    "be", "been", "being", "currently", "yet", "really", "always", "an", "a", "at", "the",
    "moment", "present", "presently", "unfortunately", "still", "longer", "possibly",
    "quite", "actually", "also", "this", "time", "right", "now",
    # a time after the verdict keeps it the verdict: "was suspended last month"
    "until", "further", "notice", "temporarily", "indefinitely", "permanently", "recently",
    "last", "week", "month", "year", "today", "since",
)
# After a negator, these mark a new verb phrase: "…shipped and can't be cancelled".
VERB_START_EN = (
    "we", "they", "it", "you", "i", "can't", "cannot", "won't", "don't", "doesn't", "isn't",
    "is", "are", "was", "will", "can", "may", "must", "should", "has", "have", "do", "does",
    "not", "never", "no",
)
# "without X" governs its noun phrase; a finite verb after it starts the clause's own verb.
FINITE_EN = ("is", "are", "was", "were", "will", "can", "may", "must", "should", "has", "have")

# A yes answering a question the reply quoted or asked: "…嗎？——可以的，…".
AFFIRMATIVE_ZH = (
    "兩種都可以", "两种都可以", "都可以", "兩個都可以", "两个都可以",
    "可以", "可以的", "可以喔", "可以哦", "可以唷", "可以呀", "可以啊", "可以啦", "是的", "有的",
    "對的", "对的", "沒錯", "没错", "當然", "当然", "沒問題", "没问题", "行的", "好的可以",
    "沒有問題", "没有问题", "完全沒問題", "完全没问题",
)
# What may stand before the yes: a greeting or a thanks (可以貨到付款嗎？您好，可以的).
GREETING_ZH = ("您好", "你好", "妳好", "哈囉", "哈啰", "嗨", "親愛的顧客", "亲爱的顾客", "謝謝您的詢問",
               "谢谢您的询问", "謝謝詢問", "谢谢询问", "感謝您的詢問", "感谢您的询问")
GREETING_EN = ("hi there", "hello there", "hi", "hello", "hey", "dear customer",
               "thanks for asking", "thank you for asking", "good question", "the answer is",
               "to answer your question")
# ... or the words that announce it (您問能不能…，答案是可以的)
ANSWER_LEAD_ZH = ("答案是", "回覆您", "回复您", "回復您", "跟您說", "跟您说", "告訴您", "告诉您")
AFFIRMATIVE_EN = (
    "yes", "yep", "yeah", "sure", "of course", "certainly", "absolutely", "definitely",
    "we do", "we can", "you can", "it is", "indeed", "no problem", "not a problem",
    "either works", "either is fine", "either way works", "both work", "both are fine",
)

# A quoted, reported or topical hit is mentioned, not claimed, when the rest of its sentence
# answers it with a no, a contrast, a limit or a deferral (關於分期付款，本店只接受一次付清; 您提到「可以
# 貨到付款」，可以改用信用卡). A comment with none of these (關於貨到付款，本店有提供) may
# claim it: a person reads it.
CONTRAST = ("但", "但是", "不過", "不过", "然而", "可是", "只是", "卻", "却", "but", "however",
            "though", "although", "whereas", "instead")
LIMITING = ("下架", "已結束", "已经结束", "已經結束", "結束了", "结束了", "停止", "撤下", "removed",
            "withdrawn", "discontinued", "has ended", "have ended", "no longer", "expired",
            "只", "僅", "仅", "唯一", "改用", "改成", "改為", "改为", "only", "instead",
            "alternatively", "rather", "還在", "还在", "仍在", "仍然", "still",
            # ... or defers the answer (我們確認中, we'll check): no claim made yet
            "確認", "确认", "查詢", "查询", "了解", "瞭解", "轉交", "转交", "回覆", "回复", "回復", "check",
            "confirm", "look into", "get back")

# An item excepted from the claim of its clause (除了貨到付款以外都不支援; "we accept
# everything except cash on delivery"): its polarity is the opposite of the clause's, and
# whether the clause negates the item or offers it is for a person (``unclear``).
EXCEPT_ZH = ("除了", "除去")
EXCEPT_EN = ("except", "except for", "other than", "apart from", "aside from", "excluding",
             "with the exception of")
# 除了 X 以外…: the closer ends the excepted item; after the hit it marks it excepted.
EXCEPT_CLOSE_ZH = ("以外", "之外")

# A hedge asserts nothing sure: 應該已經出貨了 is no fact (``hedged``); a forbidden claim
# hedged is still claimed. "may" and "should" are left out: they grant permission.
HEDGE_ZH = ("應該", "应该", "可能", "有可能", "也許", "也许", "或許", "或许", "大概", "好像", "似乎",
            "說不定", "说不定", "估計", "估计", "我想", "我覺得", "我觉得", "我猜", "理論上", "理论上",
            "照理說", "照理说", "照理來說", "照理来说")
HEDGE_EN = ("should", "ought to", "is expected to", "are expected to", "is supposed to",
            "are supposed to", "probably", "maybe", "perhaps", "might", "possibly", "presumably", "likely",
            "may have", "may already", "could have", "must have", "i think", "i believe",
            "i guess", "i suppose")

# A clause break in chat: an emoji between clauses (不提供分期😊 可以貨到付款). The
# negative ones (❌) are left to the words around them.
EMOJI_BREAK = r"[\U0001F300-\U0001FAFF\u2600-\u26FF\u2700-\u27BF]"
EMOJI_NOT_BREAK = "❌❎✖⛔🚫"

QUOTE_PAIRS = {"「": "」", "『": "』", "“": "”", '"': '"', "‘": "’", "《": "》"}

# Word boundaries for literal patterns (graders/patterns.py): a Chinese hit is no hit when a
# word of this list crosses its start and another crosses its end (分期 in 部分期間, 處方 in
# 此處方便, 免費 in 避免費用, 到期 in 收到期限): the dictionary says it straddles two words.
# The list is closed and short on purpose: a hit is dropped only when both its edges cut words.
BOUNDARY_WORDS_ZH = (
    "部分", "部份", "期間", "期數", "此處", "方便", "選取", "擷取", "消費", "消息", "收到",
    "期限", "實現", "兌現", "金額", "款項", "避免", "費用", "確保", "證件", "馬上", "線上",
    "交付", "送到",
    # 2.3.1: verbs ending in 出/收 and nouns opening with 貨/費/運 (出貨 in 提出貨物 and 取出貨品,
    # 收費 in 接收費用, 免運 in 避免運送)
    "提出", "取出", "拿出", "支出", "付出", "送出", "寄出", "退出", "接收", "回收", "驗收", "簽收", "籤收",
    "貨物", "貨品", "貨款", "運送", "運輸", "運作",
)
# ... and an English hit inside one of these phrases is part of a longer word with another
# meaning: "booked" in "fully booked" says no slot is left.
CONTAINING_EN = ("fully booked", "booked up", "booked out", "booked solid")

# --- assertion, not presence (issue 31): is the hit said in the reply's own voice, now, and
# unconditionally? What these cues find is the reason given as evidence.
# Time: what was (we used to…, 以前有…) is no fact now and no offer.
# (not a bare 以前: 下午三點以前下單 is a deadline)
PAST_ZH = ("以前曾", "我們以前", "我们以前", "本店以前", "之前曾", "曾經", "曾经", "過去曾",
           "过去曾", "過去有", "过去有", "原本有", "先前曾", "早期有")
PAST_EN = ("used to", "previously", "formerly", "in the past", "we once")
# ... what will be from a date (下個月起, from next month) is not yet: no fact now, and an
# offer of it is for a person; a bare "next month" is read by a person either way.
FUTURE_START_ZH = ("下個月起", "下个月起", "下月起", "下週起", "下周起", "明年起", "下一季起",
                   "即將推出", "即将推出", "即將上線", "即将上线", "即將開放", "即将开放", "起才",
                   "下個月上線", "下个月上线", "下個月推出", "下个月推出", "下個月開放", "下个月开放")
FUTURE_START_EN = ("from next month", "starting next month", "from next week",
                   "starting next week", "from next year", "starting next year", "coming soon")
FUTURE_ZH = ("下個月", "下个月", "明年", "下一季", "預計下週", "预计下周", "預計下周")
FUTURE_EN = ("next month", "next year", "next quarter", "will be available", "will launch",
             "will be launched")
# A general rule the next sentence takes back (原則上可以…，不過這項商品不行).
GENERAL_ZH = ("原則上", "原则上", "一般來說", "一般来说", "一般商品", "一般情況", "一般情况", "通常",
              "正常來說", "正常来说", "本來", "本来", "原本", "平常", "一般可以", "一般都", "一般是")
GENERAL_EN = ("normally", "usually", "generally", "in principle", "typically", "ordinarily")
# Reported by someone else, not confirmed by the reply (物流那邊說已經修好了; according to the
# courier…): a fact a person reads. The system's word counts unless the reply doubts it.
HEARSAY_ZH = ("說", "说", "表示", "回報", "回报", "聽說", "听说", "據說", "据说", "據報", "据报",
              "轉達", "转达")
HEARSAY_EN = ("says", "said", "according to", "told us", "reports", "reported", "claims",
              "claimed", "tells us")
SHOWS_ZH = ("顯示", "显示")
SHOWS_EN = ("shows", "showed", "shown as", "displays")
DOUBT = ("不過", "不过", "但", "查證", "查证", "確認中", "确认中", "還在確認", "还在确认",
         "還沒實際確認", "not sure", "let me check", "though", "haven't verified",
         "have not verified", "not verified", "double-check", "double check", "不確定", "不确定")
# Where a condition opens the clause before the hit's (如果醫師同意，我會幫您預約): the hit is
# its consequent. Besides the hypothetical words: these.
CONDITION_ZH = ("等您", "等你", "待您", "一旦", "只要")
CONDITION_EN = ("once", "as soon as", "after you")
# For a fact only (2.3.1): a condition or an event to wait for opening the clause before the hit
# (provided that you return it…, after the payment clears…, 系統更新完成後，…): the fact is not
# so yet. A forbidden thing keeps the narrower list above (a warning there passes).
CONDITION_FACT_EN = ("provided that", "providing that", "provided", "as long as", "on condition",
                     "in case", "after", "when", "once")
CONDITION_FACT_END_ZH = ("後", "后", "之後", "之后", "以後", "以后", "時", "时", "的時候", "的时候",
                         "的話", "的话")
# ... a rule on a threshold (消費滿 2,000 元即可…, orders above NT$3,000…, 兩件以上): a fact only
# when the reply says this customer meets it; met when it says so in these words, or names an
# amount of the customer's at or over the threshold.
MET = ("已滿", "已满", "已達", "已达", "已經滿", "已经满", "已經達", "已经达", "已符合", "已經符合",
       "已经符合", "符合資格", "符合资格", "qualifies", "qualified", "since your", "is over",
       "is above", "exceeds")
CUSTOMER_OWN = ("您的", "您這", "您这", "您此", "您目前", "您本次", "您這次", "您这次", "您這筆",
                "your", "you've", "you have", "you spent")
# ... an exception the next clause makes after a contrast (本店提供免費退貨，但特價品除外; but
# sale items are excluded): whether this customer's case is one, a person reads.
EXCEPTION = ("除外", "不適用", "不适用", "不包含", "不包括", "不在此限", "例外", "排除", "excluded",
             "except", "exception", "does not apply", "doesn't apply", "not included",
             "not eligible", "not covered")
# ... an expectation with a deadline (…前), said of what the reply does not yet state as done (預計週五前
# 完成退款, will be processed by Friday): a fact a person reads.
EXPECT_ZH = ("預計", "预计", "預估", "预估", "估計", "估计")
# A warning names what will happen (如果出血止不住，可能需要住院; once you report it the card is
# blocked); an offer says what the reply will do or allows: these words make it an offer.
OFFER_ZH = ("可以", "即可", "可享", "可獲", "可获", "可申請", "可申请", "可辦理", "可办理", "能夠",
            "能够", "才能", "就能", "都能", "便能", "幫您", "帮您", "為您", "为您", "替您", "給您",
            "给您", "我們會", "我们会", "我會", "我会", "破例", "免費", "免费", "安排", "提供",
            "支援", "支持", "接受", "開放", "开放")
OFFER_EN = ("can", "could", "we'll", "we will", "i'll", "i will", "able to", "happy to",
            "let you", "allow", "offer", "option", "available", "accept", "provide")
# A conditional offer states a policy (如果商品有瑕疵，我們會全額退款: a fact) unless its
# condition is still pending (醫師同意, 審核通過, once the payment clears) or a class the
# customer may not be in (金卡會員, if you're a Plus member): then a person reads the fact.
PENDING = ("同意", "通過", "通过", "核准", "核準", "批准", "批準", "審核", "审核", "確認", "确认",
           "補上", "补上",
           "補齊", "补齐", "agree", "agrees", "approve", "approves", "approved", "clears",
           "cleared", "confirm", "confirms", "confirmed", "verify", "verified", "等您", "等你",
           "待您", "一旦", "once", "as soon as", "after you")
TIER = ("會員", "会员", "卡友", "金卡", "白金", "鈦金", "钛金", "投保", "保險", "保险", "member",
        "members", "cardholder", "cardholders", "tier", "gold", "platinum", "premium", "plus",
        "insured", "vip")
WARNING_LEAD = ("提醒您", "請注意", "请注意", "注意", "please note", "note that", "be aware")
# A condition the reply says is not met (滿 1,500 元免運…還差 300 元): not so.
UNMET = ("還差", "还差", "未達", "未达", "尚未達到", "尚未达到", "不符合", "不足", "short of",
         "not eligible", "doesn't qualify", "does not qualify", "isn't eligible")
# "…不支援 A，B 也一樣": the clause inherits the negation of the one before it.
INHERIT_SUFFIX = ("也一樣", "也一样", "也是", "也是一樣", "也是一样", "亦同", "也相同", "也同樣",
                  "也同样", "也都一樣", "也都一样", "也是如此", "too", "as well")
INHERIT_PREFIX_EN = ("the same goes for", "same goes for", "the same applies to", "same for",
                     "same with", "likewise")
# A question that offers (您要退到信用卡還是轉購物金？, would you like…?) presupposes what it
# names: an offer of a forbidden thing, a fact a person reads.
ALTERNATIVE = ("還是", "还是", "或是", "或者", " or ")
OFFER_QUESTION = ("您要", "您希望", "需要我", "要不要", "would you like", "do you want",
                  "want me to", "shall i", "should i", "you prefer")
# A yes that the reply adds itself to a quoted or reported claim (這點我們確實有提供).
AFFIRM_STRONG = ("確實", "确实", "的確", "的确", "indeed")
# After a double negation, "only" says the claim stands (不是不能退，只是需要…).
ONLY_AFTER = ("只是", "只不過", "只不过", "just", "only")
# Hedges after the hit ("cancelling now should be fine").
SUFFIX_HEDGE_EN = ("should be fine", "should be ok", "should be okay", "should be no problem",
                   "should work")
