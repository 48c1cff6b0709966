import sys

from twin.cli import main

sys.exit(main())
