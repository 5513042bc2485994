from __future__ import annotations

import pytest

from graders.normalize import normalize


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ＦＡＱ　有寫", "faq 有寫"),  # full-width letters and ideographic space
        ("LINE  Pay\t付款", "line pay 付款"),
        ("  前後空白  ", "前後空白"),
        ("第一行 \n\n  第二行", "第一行\n第二行"),  # a line break survives: it ends a clause
        ("１２３", "123"),
    ],
)
def test_normalize_is_nfkc_casefold_and_collapsed_space(raw, expected):
    assert normalize(raw) == expected


def test_normalize_is_idempotent_on_mixed_text():
    text = "Ｓtraße  本店\u3000不提供\n\n貨到付款！"
    once = normalize(text)
    assert normalize(once) == once


def test_traditional_simplified_folding_is_on_unless_turned_off():
    assert normalize("貨到付款", fold=False) != normalize("货到付款", fold=False)
    assert normalize("貨到付款") == normalize("货到付款")


@pytest.mark.parametrize("raw", ["NT$2,400", "NT$ 2,400", "2,400 元", "2400元", "$2,400"])
def test_amounts_are_written_one_way(raw):
    assert normalize(raw) == "2400元"


def test_folding_keeps_the_way_back_to_the_original():
    from graders.normalize import normalize_mapped

    m = normalize_mapped("  您好，金額 NT$2,400  元\n\n 已退回")
    i = m.text.index("2400元")
    assert m.quote(i, i + len("2400元")) == "NT$2,400  元"
    assert m.quote(0, len(m.text)) == "您好，金額 NT$2,400  元\n\n 已退回"


def test_folding_keeps_lengths_for_the_script():
    assert len(normalize("我们提供货到付款服务")) == len("我们提供货到付款服务")


def test_every_cue_list_holds_the_folded_form_of_its_words():
    """Replies are folded before the scope model reads them: a cue only in its unfolded form
    (核准, read 核準 in a folded reply) would never be found."""
    from graders import cues
    from graders.normalize import fold_script

    missing = [(name, w) for name, words in vars(cues).items() if isinstance(words, tuple)
               for w in words if isinstance(w, str) and fold_script(w) not in words]
    assert missing == []


@pytest.mark.parametrize("unit", ["1,", "1 元", "$1", "12,345 元 ", "1.2,", "9" * 50 + ","])
def test_folding_reads_each_amount_in_a_bounded_window(unit, monkeypatch):
    """Hostile repeats (digit runs with commas, signs, spaced 元) cost a bounded amount of work
    per anchor, so folding stays linear in the reply: every amount is read from at most 28
    characters before the sign, comma or 元 that found it (recorded, not timed)."""
    import sys
    from bisect import bisect_left

    nz = sys.modules["graders.normalize"]  # graders.normalize is also the function's name
    reads: list[int] = []
    real = nz._AMOUNT

    class Recording:
        def match(self, text, pos):
            reads.append(pos)
            return real.match(text, pos)

    monkeypatch.setattr(nz, "_AMOUNT", Recording())
    text = unit * (40_000 // len(unit))
    anchors = nz._anchors(text)
    nz._amounts(text)
    assert len(reads) <= 4 * len(anchors)
    for pos in reads:
        k = bisect_left(anchors, pos)
        assert k < len(anchors) and anchors[k] - pos <= 28
