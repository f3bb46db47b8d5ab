"""``python -m posviz.vislab``: see :mod:`posviz.vislab.cli`."""

import sys

from .cli import main

sys.exit(main())
