"""Kept change verdicts on both backends: one row per agent, read only under its key,
replaced by the next walk (exam/store/changes.py)."""

from __future__ import annotations


def test_a_walk_is_read_back_only_under_the_key_it_was_kept_under(store):
    assert store.kept_changes("A", "k1") is None
    assert store.keep_changes("A", "k1", '{"v2": "hold"}')
    assert store.kept_changes("A", "k1") == '{"v2": "hold"}'
    assert store.kept_changes("A", "k2") is None
    assert store.kept_changes("B", "k1") is None


def test_the_next_walk_replaces_an_agents_row(store):
    store.keep_changes("A", "k1", '{"v2": "hold"}')
    store.keep_changes("B", "k1", '{"v1": "—"}')
    assert store.keep_changes("A", "k2", '{"v2": "ship", "text": "備貨中"}')
    assert store.kept_changes("A", "k1") is None
    assert store.kept_changes("A", "k2") == '{"v2": "ship", "text": "備貨中"}'
    assert store.kept_changes("B", "k1") == '{"v1": "—"}'
