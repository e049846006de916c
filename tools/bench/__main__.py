"""`make bench` runs this: `python -m tools.bench` from the repository root."""

import sys

from tools.bench.runner import main

sys.exit(main())
