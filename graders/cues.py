"""Cue lists for classifying an occurrence (see docs/graders.md, "Negation rules").

All cues are in normalised form (NFKC, casefolded). Chinese cues are given in
Traditional and Simplified. Multi-character cues are listed so that ``並非`` counts
as one negation, not two; the longest cue wins at each position.
"""

from __future__ import annotations

# Negators. Single characters cover most Chinese negation; compounds exist so
# they count once (並非不 = two cues = double negation).
NEGATION_ZH = (
    "不", "沒", "没", "無", "无", "未", "非", "別", "别", "勿", "莫", "否", "毋", "甭", "免於",
    "並非", "并非", "並不", "并不", "並未", "并未", "並沒有", "并没有", "絕非", "绝非",
    "不是", "沒有", "没有", "無法", "无法", "不能", "不可", "不可以", "不會", "不会", "不再",
    "尚未", "從未", "从未", "從不", "从不", "絕不", "绝不", "決不", "决不", "不得", "不足",
    "不需", "不需要", "不用", "無須", "无须", "無需", "无需", "毋須", "毋须",
    "缺乏", "缺少", "欠缺", "禁止", "拒絕", "拒绝", "停止", "暫停", "暂停", "取消了",
)
NEGATION_EN = (
    "not", "no", "never", "cannot", "can't", "can’t", "cant", "don't", "don’t", "dont",
    "doesn't", "doesn’t", "didn't", "didn’t", "won't", "won’t", "isn't", "isn’t",
    "aren't", "aren’t", "wasn't", "wasn’t", "weren't", "weren’t", "shouldn't", "couldn't",
    "wouldn't", "haven't", "hasn't", "hadn't", "mustn't", "neither", "nor", "without",
    "unable", "none", "nothing", "nobody", "lack", "lacks", "lacking", "no longer",
)

# Look like negations, are not: masked before negators are counted.
PSEUDO_NEGATION_ZH = (
    "非常", "不僅", "不仅", "不只", "不但", "不單", "不单", "沒問題", "没问题", "沒有問題",
    "没有问题", "不論", "不论", "無論", "无论", "不管", "沒關係", "没关系", "不客氣", "不客气",
    "不好意思", "不用擔心", "不用担心", "別擔心", "别担心", "不錯", "不错", "不少", "不久",
    "不斷", "不断", "不同", "未來", "未来", "無限", "无限", "不得不", "非得", "無不", "无不",
    "莫不", "不妨", "無比", "无比", "不禁", "非凡", "無誤", "无误", "無缺", "无缺",
)
PSEUDO_NEGATION_EN = (
    "not only", "no problem", "no worries", "not just", "no doubt", "nothing but",
    "not to mention", "no matter", "none other than",
)

# Questions and reported questions: the clause asks, it does not assert.
INTERROGATIVE_ZH = (
    "是否", "能否", "可否", "有沒有", "有没有", "是不是", "會不會", "会不会", "可不可以",
    "能不能", "要不要", "有無", "有无", "請問", "请问", "詢問", "询问", "您問", "您问",
    "你問", "你问", "問到", "问到", "想知道", "想了解", "確認是否", "确认是否", "與否", "与否",
)
INTERROGATIVE_EN = ("whether", "ask", "asked", "asking", "asks", "wonder", "wondering", "inquire")
QUESTION_SUFFIX = ("嗎", "吗", "與否", "与否")

HYPOTHETICAL_ZH = (
    "如果", "假如", "假設", "假设", "若", "要是", "倘若", "萬一", "万一", "除非", "一旦", "假使",
)
HYPOTHETICAL_EN = ("if", "unless", "suppose", "supposing", "in case", "assuming")
HYPOTHETICAL_SUFFIX = ("的話", "的话")

# End a negation's scope inside a clause: contrast, coordination, a new subject, a
# subordinate time clause. "沒有庫存時我們提供貨到付款" is not a negated offer.
SCOPE_BREAK_ZH = (
    "但", "但是", "不過", "不过", "然而", "可是", "只是", "卻", "却", "而是",
    "也", "還", "还", "並且", "并且", "而且", "同時", "同时", "另外", "此外", "以及",
    "時", "时", "時候", "时候", "之後", "之后", "以後", "以后",
    # 的 closes a modifier: in 未開封的商品 / 沒有庫存的商品 the negator stays inside it.
    "的",
    "我們", "我们", "本店", "他們", "他们", "公司", "店家",
)
SCOPE_BREAK_EN = (
    "but", "however", "though", "although", "yet", "whereas", "instead", "and", "also",
    "when", "we", "our", "they",
)

QUOTE_PAIRS = {"「": "」", "『": "』", "“": "”", '"': '"', "‘": "’", "《": "》"}

# How far (in CJK characters plus Latin words) a negator may stand before the
# occurrence and still clearly govern it; beyond this the scope is unclear.
NEAR_WINDOW = 6
