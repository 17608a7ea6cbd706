"""`gpuwise bench`: bounded measurements of what a machine delivers, and the user's own task packages.

    suite.run_suite(...)        the standard tasks (GEMM, memory, transfers, disk, training steps, decode)
    usertask.run_task(...)      `gpuwise bench task -- CMD`: run a command, sample the GPUs, seconds per unit
    compare.load_result(...)    read a results file back for `gpuwise bench compare`

torch is optional (the `bench` extra) and imported only inside the functions that measure with it, so the
user-task runner and compare work without it. May import gpu, catalog, estimate, workload and idle; never
the CLI (only the CLI prints or exits).
"""
