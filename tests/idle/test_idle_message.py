"""idle/message.py: a reason is English as a str (logs, files) and in the reader's language with text()."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwise.idle.message import Msg, join, raw, text
from gpuwise.idle.policy import PolicyState
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.status import idle_status
from gpuwise.locale import N_, use_language


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    yield
    use_language("en")


def _reason() -> Msg:
    held = Msg(N_("GPU memory held ({why})"), why=Msg(N_("{gpu}: memory used not reported"), gpu="GPU 0"))
    quiet = join("", [", ", Msg(N_("no SSH sessions")), ", ", raw("my own {detail}")])
    return Msg(N_("{gpu} at {util:.0f}% util"), gpu=join("; ", [held, quiet]), util=97.2)


def test_a_msg_is_its_english_sentence_and_renders_in_the_current_language() -> None:
    english = (
        "GPU memory held (GPU 0: memory used not reported); , no SSH sessions, my own {detail} at 97% util"
    )
    assert _reason() == english and json.dumps(_reason()) == json.dumps(english)
    use_language("zh")
    shown = _reason().text()
    assert "显存被占用（GPU 0：未报告已用显存）" in shown and "没有 SSH 会话" in shown
    assert "my own {detail}" in shown  # raw text is shown as it is
    assert str(_reason()) == english  # still English where a string is written
    assert text("plain") == "plain"


def test_a_msg_survives_the_state_file_copy_and_pickle() -> None:
    again = Msg.from_json(json.loads(json.dumps(_reason().to_json())))
    assert again is not None and again == _reason()
    for other in (copy.deepcopy(_reason()), pickle.loads(pickle.dumps(_reason()))):
        assert isinstance(other, Msg) and other.to_json() == _reason().to_json()
    use_language("zh")
    assert again.text() == _reason().text() != str(again)


@pytest.mark.parametrize(
    "data",
    [
        "a reason",
        {"msgid": 3},
        {"msgid": "{x:999999999}", "fields": {"x": "a"}},  # a gigabyte of padding
        {"msgid": "{x.__class__}", "fields": {"x": "a"}},
        {"msgid": "{x[0]}", "fields": {"x": "a"}},
        {"msgid": "{x!r}", "fields": {"x": "a"}},
        {"msgid": "{missing}", "fields": {}},
        {"msgid": "{x:.0f}", "fields": {"x": "not a number"}},
        {"msgid": "{x:.0f}", "fields": {"x": 10**400}},  # beyond a float
        {"msgid": "{x}", "fields": {"x": [1, 2]}},
        {"msgid": "{x}", "fields": {"x": {"msgid": "{y}", "fields": {"y": {"msgid": 1}}}}},
        {"msgid": "a", "translate": "no"},
    ],
)
def test_a_damaged_saved_msg_is_refused(data: object) -> None:
    assert Msg.from_json(data) is None


def test_nesting_is_bounded() -> None:
    deep: dict[str, object] = {"msgid": "x"}
    for _ in range(20):
        deep = {"msgid": "{x}", "fields": {"x": deep}}
    assert Msg.from_json(deep) is None


def test_policy_causes_keep_their_msgid_and_old_files_still_load() -> None:
    state = PolicyState(
        last_ts=10.0, last_activity_s=5.0, last_activity_cause=Msg(N_("start of observation"))
    )
    again = PolicyState.from_json(json.loads(json.dumps(state.to_json())))
    assert isinstance(again.last_activity_cause, Msg)
    old = PolicyState.from_json(
        {"last_ts": 10.0, "last_activity_s": 5.0, "last_activity_cause": "GPU 0 at 9%"}
    )
    assert old.last_activity_cause == "GPU 0 at 9%"


def test_status_of_a_state_file_without_reason_msg_shows_the_saved_reason() -> None:
    data = {
        "version": 1,
        "updated_at": 100.0,
        "decision": {"state": "busy", "reason": "busy: GPU 0 at 9% util"},
    }
    st = idle_status(data, Path("state.json"), IdleSettings(), 110.0)
    use_language("zh")
    assert text(st.reason or "") == "busy: GPU 0 at 9% util"
