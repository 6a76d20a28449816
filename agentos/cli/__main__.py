"""`python -m agentos.cli`: the `agentos` command."""

import sys

from agentos.cli import main

sys.exit(main())
