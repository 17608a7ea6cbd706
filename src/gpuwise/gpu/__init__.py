"""GPU probes: one `Sample` per GPU per instant, from NVML, nvidia-smi output or a recording.

    sample.py      data model: Sample, Snapshot, GpuProcess, MigDevice, NotSupported, Failed, ParseProblem
    probe.py       Probe protocol, open_probe(replay=None, clock=…, loop=…), ReplayProbe
    nvml.py        NvmlProbe (nvidia-ml-py, imported lazily; no subprocess per sample)
    smi_probe.py   SmiProbe: `nvidia-smi -q -x` subprocess fallback
    replay.py      load_recording(path) -> Recording, format detected from content (docs/replay.md)
    smi_csv.py     --query-gpu CSV: parse_query_csv, read_query_csv, format_trace_time
                   (smi_csv_columns.py what a header's columns mean, smi_csv_polls.py rows per poll)
    smi.py         the nvidia-smi parsers' public names: smi_xml.py -q -x XML, smi_text.py -q text,
                   smi_errors.py failure messages and lost GPUs, smi_fields.py the field tables
    smi_table.py   the default table
    capture.py     multi-section capture files; kernel_log.py Xid lines

Importing this package imports nothing heavy; pynvml is loaded only when a live NVML probe opens.
"""
