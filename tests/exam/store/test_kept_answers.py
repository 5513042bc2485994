"""Kept report answers on both backends: one row per slot, read only under its key, replaced by
the next answer (exam/store/answers.py)."""

from __future__ import annotations


def test_an_answer_is_read_back_only_under_the_key_it_was_kept_under(store):
    assert store.kept_answer("s1", "k1") is None
    assert store.keep_answer("s1", "k1", '{"verdict": "hold"}')
    assert store.kept_answer("s1", "k1") == '{"verdict": "hold"}'
    assert store.kept_answer("s1", "k2") is None
    assert store.kept_answer("s2", "k1") is None


def test_the_next_answer_replaces_a_slots_row(store):
    store.keep_answer("s1", "k1", '{"verdict": "hold"}')
    store.keep_answer("s2", "k1", "{}")
    assert store.keep_answer("s1", "k2", '{"verdict": "ship", "text": "備貨中"}')
    assert store.kept_answer("s1", "k1") is None
    assert store.kept_answer("s1", "k2") == '{"verdict": "ship", "text": "備貨中"}'
    assert store.kept_answer("s2", "k1") == "{}"
