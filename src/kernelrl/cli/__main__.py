"""`python -m kernelrl.cli`: the same as the `kernelrl` command."""

from kernelrl.cli import main

main()
