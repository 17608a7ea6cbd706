"""Pure estimation: memory, FLOPs, communication and time for a workload on a GPU configuration."""
