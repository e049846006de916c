"""`make bench` runs this: `python -m bench` from the repository root."""

import sys

from bench.runner import main

sys.exit(main())
