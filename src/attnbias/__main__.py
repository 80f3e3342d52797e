"""`python -m attnbias`: the command line, as the `attnbias` script."""

import sys

from .cli import main

sys.exit(main())
