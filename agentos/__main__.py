"""`python -m agentos`: the `agentos` command."""

import sys

from agentos.cli import main

sys.exit(main())
