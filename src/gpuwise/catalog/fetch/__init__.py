"""`gpuwise catalog fetch <cloud>`: GPU instance prices from a Chinese cloud's own API, run with the user's
credentials, written as a dated catalog file in the import schema (SkyPilot's vms.csv plus ``Currency`` and
``PriceDate``).

One module per cloud (``aliyun``, ``huawei``, ``tencent``) turns that cloud's documented API responses into
rows; ``common`` holds the row model, the region loop (one failing region is a warning, not the end), the CSV
writer and the credential lookup. Every cloud is reached through a small :class:`~.common.Api` interface
(action, region, parameters -> the documented JSON response), so tests drive the parsers with recorded
responses and the real SDK adapters stay a few lines each, imported only when a fetch runs.

Must not import the CLI. The SDKs are optional extras (``gpuwise[aliyun]``, ``gpuwise[huawei]``,
``gpuwise[tencent]``).
"""
