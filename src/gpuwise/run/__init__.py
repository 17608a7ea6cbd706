"""`gpuwise run`: a supervised job whose checkpoints reach object storage whole, resume after a preemption,
and leave one ledger row per run.

    manifest.py   pure: what makes a checkpoint complete, the manifest, which one to resume, what to prune
    store.py      the fsspec edge: upload, verify, list and download checkpoints (file://, s3://, gs://, oss://)
    syncer.py     the background thread that uploads each newly completed checkpoint and keeps the last K
    watchers.py   preemption notices from the AWS, GCP and Azure metadata services
    runner.py     the supervisor: child process group, signals, grace period, final flush, pid file
    ledger.py     the run ledger table in the history SQLite file, and its pure summary

May import `gpu` and `idle` (instance metadata) and the leaf modules; never monitor, plan or cli.
"""
