"""Allow `python -m crcr`."""

from crcr.cli import main

main()
