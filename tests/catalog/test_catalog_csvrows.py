"""The SkyPilot-schema CSV reader: round trips, line-numbered problems, and no crash on any text."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.csvrows import read_vms_csv

HEADER = [
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "Region",
    "SpotPrice",
]

text_cell = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=20
)
price = st.one_of(st.just(""), st.floats(min_value=0.001, max_value=1e4, allow_nan=False).map(repr))
row = st.tuples(
    text_cell,
    st.sampled_from(["H100", "A100-80GB", "L4", "T4"]),
    st.integers(min_value=1, max_value=16).map(str),
    st.integers(min_value=1, max_value=256).map(str),
    st.integers(min_value=1, max_value=4096).map(str),
    price,
    text_cell,
    price,
)


def write(rows: list[list[str]], header: list[str] = HEADER) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(st.lists(row, max_size=20))
def test_valid_rows_round_trip(rows: list[tuple[str, ...]]) -> None:
    text = write([list(r) for r in rows])
    parsed, problems = read_vms_csv(text, "t.csv", strict=True)
    assert problems == []
    # Rows whose every cell is blank are skipped as empty lines; none of these is.
    assert [tuple(p.fields[h] for h in HEADER) for p in parsed] == rows


@settings(max_examples=60, deadline=None)
@given(st.lists(row, min_size=1, max_size=15), st.data())
def test_a_bad_number_is_reported_at_its_line(rows: list[tuple[str, ...]], data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(rows) - 1))
    broken = [list(r) for r in rows]
    broken[index][5] = "cheap"
    text = write(broken)
    parsed, problems = read_vms_csv(text, "t.csv", strict=True)
    assert [(p.file, p.line) for p in problems] == [("t.csv", index + 2)]
    assert "Price 'cheap' is not a number" in str(problems[0])
    assert len(parsed) == len(rows) - 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_rows_or_problems_never_an_exception(text: str) -> None:
    parsed, problems = read_vms_csv(text, "t.csv", strict=True)
    for p in problems:
        assert p.line >= 1 and str(p).startswith("t.csv:")
    for r in parsed:
        assert r.line >= 2


def test_azure_unquoted_generation_is_joined() -> None:
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
    header += "Generation"
    text = header + "\nStandard_NC6s_v3,V100,1,6,112,V100,3.06,0.6,eastus,V1,V2\n"
    (r,), problems = read_vms_csv(text, "azure.csv", strict=True)
    assert problems == []
    assert r.fields["Generation"] == "V1,V2"
    assert r.fields["Region"] == "eastus"


def test_shape_problems() -> None:
    _, problems = read_vms_csv("", "e.csv", strict=True)
    assert "empty" in str(problems[0])
    _, problems = read_vms_csv("name,price\nx,1\n", "h.csv", strict=True)
    assert str(problems[0]).startswith("h.csv:1: header lacks column(s) InstanceType, AcceleratorName")
    text = write([["a", "H100", "0", "8", "32", "1.0", "r", ""]])
    _, problems = read_vms_csv(text, "c.csv", strict=True)
    assert str(problems[0]) == "c.csv:2: AcceleratorName 'H100' needs a positive AcceleratorCount, got '0'"
    text = write([["a", "H100", "1", "8", "32", "nan", "r", ""]])
    _, problems = read_vms_csv(text, "n.csv", strict=True)
    assert "Price 'nan' is not a number" in str(problems[0])
