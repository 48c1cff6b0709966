"""``python -m calibrate``: the calibration command without the twin installed."""

import sys

from calibrate.cli import main

sys.exit(main())
