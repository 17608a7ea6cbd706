"""The idle stopper's stop call for each provider, chosen from the instance's identity, and the order the
calls are tried in (a failed stop falls back only where the user's config says so, and says so loudly).

Modules: `metadata` (the clouds' metadata services, shared with `gpuwise run`), `base` (credentials, one
HTTP call with retries, a stop step), one module per HTTP API (`runpod`, `vast`, `lambdalabs`, `paperspace`,
`hyperstack`, `tencent`, `huawei`), `clis` (providers stopped through their own CLI), `table` (what each
action does to the bill and the disk, for `gpuwise idle providers`) and `plan` (identity detection and the
ordered steps). Standard library only.
"""
