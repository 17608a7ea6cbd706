"""`python -m gpuwise …` runs the same CLI as the `gpuwise` console script."""

from gpuwise.cli.entry import run

if __name__ == "__main__":
    run()
