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


def test_traditional_simplified_folding_is_opt_in():
    assert normalize("貨到付款") != normalize("货到付款")
    assert normalize("貨到付款", fold=True) == normalize("货到付款", fold=True)
