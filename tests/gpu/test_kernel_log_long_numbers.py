"""Xid lines whose numbers run to thousands of digits (found by tests/fuzz): Python refuses to convert a
string of over 4,300 digits to int (a ValueError, not a parse problem), so the reader must not try."""

from __future__ import annotations

from gpuwise.gpu.kernel_log import parse_xid_events

_LINE = "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): {xid}, pid={pid}, name=python, Timeout"


def test_a_pid_of_5000_digits_is_unknown_not_a_crash() -> None:
    (event,) = parse_xid_events(_LINE.format(xid=119, pid="9" * 5000))
    assert event.xid == 119
    assert event.pid is None


def test_an_xid_of_5000_digits_is_not_an_xid_line() -> None:
    text = _LINE.format(xid="9" * 5000, pid=1) + "\n" + _LINE.format(xid=79, pid=2)
    assert [e.xid for e in parse_xid_events(text)] == [79]


def test_ordinary_numbers_still_read() -> None:
    (event,) = parse_xid_events(_LINE.format(xid=119, pid=2024380))
    assert (event.xid, event.pid) == (119, 2024380)
