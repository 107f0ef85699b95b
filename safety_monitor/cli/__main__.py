"""`python -m safety_monitor.cli`: the `safety-monitor` command."""

import sys

from safety_monitor.cli import main

sys.exit(main())
