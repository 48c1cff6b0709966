import sys

from twin.cli.entry import main

sys.exit(main())
