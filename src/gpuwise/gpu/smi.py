"""The `nvidia-smi` output parsers, in one place: `-q -x` XML, `-q` text and the one-line failure messages.

Each parser returns a `Parsed`: a `Snapshot` plus the `ParseProblem`s it met. A damaged or truncated
output yields what could be read and a problem naming the part that could not, never a traceback. A GPU
that nvidia-smi names in an "Unable to determine the device handle" line becomes a lost sample beside the
others. The work is done in one module per format, which this one gathers under the names other rooms
import:

    smi_xml.py      `-q -x` XML (parse_xml)
    smi_text.py     `-q` text (parse_query_text)
    smi_errors.py   failure messages, ErrorKind, lost GPUs (parse_error_text, classify_error_text)
    smi_fields.py   the field tables both `-q` parsers read through, across driver generations

(the default table is `smi_table.py`, the `--query-gpu` CSV `smi_csv.py`). Pure; standard library only.
"""

from __future__ import annotations

from gpuwise.gpu.smi_errors import (
    ErrorKind,
    classify_error_text,
    looks_like_error_text,
    lost_sample,
    parse_error_text,
    with_lost_gpus,
)
from gpuwise.gpu.smi_fields import Parsed, parse_smi_time
from gpuwise.gpu.smi_text import looks_like_query_text, parse_query_text
from gpuwise.gpu.smi_xml import looks_like_xml, parse_xml

__all__ = [
    "ErrorKind",
    "Parsed",
    "classify_error_text",
    "looks_like_error_text",
    "looks_like_query_text",
    "looks_like_xml",
    "lost_sample",
    "parse_error_text",
    "parse_query_text",
    "parse_smi_time",
    "parse_xml",
    "with_lost_gpus",
]
