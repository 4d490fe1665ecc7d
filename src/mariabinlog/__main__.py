"""``python -m mariabinlog``: the same entry point as the ``mariabinlog`` script."""

import sys

from mariabinlog.cli import main

sys.exit(main())
