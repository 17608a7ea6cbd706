"""The command line: the only place that prints or chooses exit codes.

Each command group is one module (catalog, estimate, plan, doctor, monitor, exporter, idle).
Modules here import only typer/rich at the top; everything heavy is imported inside the command.
"""
