"""The words plan shows for its ids: one table each, marked for the catalog, translated where shown."""

from __future__ import annotations

from gpuwise.locale import _, use_language
from gpuwise.plan.output import PRICING_WORDS, pricing_word


def test_pricing_words_are_one_table_translated_where_shown() -> None:
    assert PRICING_WORDS == {"spot": "spot", "on_demand": "on-demand", "reserved": "reserved"}
    assert [pricing_word(p) for p in PRICING_WORDS] == ["spot", "on-demand", "reserved"]
    use_language("zh")
    shown = {p: pricing_word(p) for p in PRICING_WORDS}
    assert shown == {p: _(word) for p, word in PRICING_WORDS.items()}
    assert shown["on_demand"] == "按需"  # the catalog's word, not the id
    assert all(shown[p] != word for p, word in PRICING_WORDS.items())  # every word has a translation


def test_a_pricing_kind_without_a_word_is_shown_as_its_id() -> None:
    assert pricing_word("savings_plan") == "savings-plan"
    use_language("zh")
    assert pricing_word("savings_plan") == "savings-plan"
