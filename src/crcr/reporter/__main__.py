"""`python3 -m crcr.reporter`: the standard-library entry point (see `crcr.reporter.standalone`)."""

import sys

from crcr.reporter.standalone import main

sys.exit(main())
