"""The lexicon of the scope model (docs/graders.md, "The scope model").

Cues are *words*: the scanner takes the longest cue at each position, so a word that merely
contains a negating character (特別, 毫不猶豫地, 免費, 未滿, 沒錯) is read as the word it is.
All cues are in normalised form (NFKC, casefolded); Chinese cues are given in Traditional and
Simplified.
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
)
NEGATION_EN = (
    "not", "no", "never", "cannot", "can't", "can’t", "cant", "don't", "don’t", "dont",
    "doesn't", "doesn’t", "didn't", "didn’t", "won't", "won’t", "isn't", "isn’t",
    "aren't", "aren’t", "wasn't", "wasn’t", "weren't", "weren’t", "shouldn't", "couldn't",
    "wouldn't", "haven't", "hasn't", "hadn't", "mustn't", "neither", "nor", "without",
    "unable", "none", "nothing", "nobody", "lack", "lacks", "lacking", "no longer", "not yet",
    "impossible", "unavailable",
)
# A bare prefix negator followed, in the same scope, by another negator forms a word with
# its noun (非會員, 未開封商品, 無糖) and does not negate the predicate: 非會員無法折抵.
WORD_PREFIX_NEGATION = ("非", "無", "无", "未", "沒", "没", "免")
# A negator that takes a whole clause, subject included: "it's not that we won't…",
# 並不是我們不提供… The subject after it does not end its scope.
CLAUSAL_NEGATION = (
    "not that", "it's not that", "it’s not that", "不是說", "不是说", "並不是說", "并不是说",
    "倒不是", "並不是", "并不是", "也不是說", "no reason", "no reason why", "沒有理由", "没有理由",
    "沒有道理", "没有道理",
)
# A negated quantifier says some do and some do not ("not every store offers pickup",
# 不是每一款都可以退貨): the reply asserts the hit for some; a person reads it (``unclear``).
PARTIAL_NEGATION = (
    "not every", "not all", "not always", "not necessarily", "不是每", "不是所有", "並非所有",
    "并非所有", "並非每", "并非每", "並不是每", "并不是每", "並不是所有", "并不是所有", "不一定",
    "未必", "不見得", "不见得",
)
# After the hit, a predicate of ending is its verdict: 九折優惠已經結束了 (before the hit,
# 活動結束後寄出 negates nothing).
ENDING_ZH = (
    "結束", "结束", "截止", "下架", "停售", "停產", "停产", "停辦", "停办", "失效", "過期", "过期",
    "終止", "终止", "中止", "尚無", "尚无",
)

# Words that contain a negating character and negate nothing the reply offers: pseudo-
# negations, fixed phrases, quantities (未滿 = below), "free of charge" (the thing priced is
# offered), and nouns (特別, 個別, 不便).
PSEUDO_NEGATION_ZH = (
    "非常", "不僅", "不仅", "不只", "不但", "不單", "不单", "沒問題", "没问题", "沒有問題",
    "没有问题", "不論", "不论", "無論", "无论", "不管", "沒關係", "没关系", "不客氣", "不客气",
    "不好意思", "不用擔心", "不用担心", "別擔心", "别担心", "不錯", "不错", "不少", "不久",
    "不斷", "不断", "不同", "未來", "未来", "無限", "无限", "不得不", "非得", "無不", "无不",
    "莫不", "不妨", "無比", "无比", "不禁", "非凡", "無誤", "无误", "無缺", "无缺",
    "沒錯", "没错", "沒事", "没事", "不便", "不適", "不适", "不定期", "不時", "不时",
    "未滿", "未满", "不滿", "不满", "不超過", "不超过", "未超過", "未超过", "不到一",
    "難免", "难免", "未免", "免不了", "不免",
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
)

# A negator governing a price or fee makes the thing priced free, not absent ("there isn't
# any fee to cancel", 不收運費提供貨到付款): the words that may follow it, then the fee.
COST_LEAD_EN = ("any", "extra", "additional", "hidden", "a", "an", "the", "other", "separate")
COST_EN = ("fee", "fees", "charge", "charges", "cost", "costs", "surcharge", "penalty",
           "penalties")
COST_LEAD_ZH = ("收取", "另外", "另收", "加收", "額外", "额外", "任何", "收", "另", "多", "再", "付")
COST_ZH = ("費用", "费用", "收費", "收费", "手續費", "手续费", "運費", "运费", "服務費", "服务费",
           "錢", "钱", "費", "费")

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
TOPIC_EN = ("regarding", "concerning", "as for", "as to", "with regard to", "in regard to")

HYPOTHETICAL_ZH = (
    "如果", "假如", "假設", "假设", "若", "要是", "倘若", "萬一", "万一", "除非", "一旦", "假使",
)
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
    "可能", "可行", "行", "允許", "允许", "成立", "存在", "供應", "供应", "販售", "贩售", "販賣",
    "贩卖", "賣", "卖", "實施", "实施", "辦理", "办理", "處理", "处理", "對", "对", "正確", "正确",
    "一定", "確定", "确定", "能", "會", "会", "可以", "得", "到", "保證", "保证", "承諾", "承诺",
    "安排", "配合", "通融", "服務", "服务", "做", "辦", "办", "了", "有", "規劃", "规划",
    "計畫", "计划", "計劃", "打算", "選項", "选项", "方案",
)
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
)
GOVERNING_SKIP_EN = (
    "be", "been", "being", "currently", "yet", "really", "always", "an", "a", "at", "the",
    "moment", "present", "presently", "unfortunately", "still", "longer", "possibly",
    "quite", "actually", "also", "this", "time", "right", "now",
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
    "可以", "可以的", "可以喔", "可以哦", "可以唷", "可以呀", "可以啊", "可以啦", "是的", "有的",
    "對的", "对的", "沒錯", "没错", "當然", "当然", "沒問題", "没问题", "行的", "好的可以",
)
AFFIRMATIVE_EN = (
    "yes", "yep", "yeah", "sure", "of course", "certainly", "absolutely", "definitely",
    "we do", "we can", "you can", "it is", "indeed",
)

QUOTE_PAIRS = {"「": "」", "『": "』", "“": "”", '"': '"', "‘": "’", "《": "》"}
