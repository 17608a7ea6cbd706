"""The nvidia-smi parsers live one module per format; the names other rooms import from `smi` and
`smi_csv` must stay the very objects of their homes, so a caller of either never gets a stale copy."""

from __future__ import annotations

from gpuwise.gpu import (
    smi,
    smi_csv,
    smi_csv_columns,
    smi_csv_polls,
    smi_errors,
    smi_fields,
    smi_text,
    smi_xml,
)


def test_smi_names_are_their_homes_objects() -> None:
    homes = {
        smi_xml: ("looks_like_xml", "parse_xml"),
        smi_text: ("looks_like_query_text", "parse_query_text"),
        smi_errors: (
            "ErrorKind",
            "classify_error_text",
            "looks_like_error_text",
            "lost_sample",
            "parse_error_text",
            "with_lost_gpus",
        ),
        smi_fields: ("Parsed", "parse_smi_time"),
    }
    for home, names in homes.items():
        for name in names:
            assert getattr(smi, name) is getattr(home, name), name
    assert set(smi.__all__) == {name for names in homes.values() for name in names}


def test_smi_csv_names_are_their_homes_objects() -> None:
    assert smi_csv.FIELD_MAP is smi_csv_columns.FIELD_MAP
    for name in ("busiest_per_gpu", "iter_snapshot_groups", "number_unindexed_gpus"):
        assert getattr(smi_csv, name) is getattr(smi_csv_polls, name), name
        assert name in smi_csv.__all__
