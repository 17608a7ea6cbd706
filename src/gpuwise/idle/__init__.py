"""GPU-aware idle auto-stop: the pure policy (`policy`), signal gatherers (`signals`), stop actions
(`actions`), the daemon (`daemon`) and its persisted state (`state`)."""
