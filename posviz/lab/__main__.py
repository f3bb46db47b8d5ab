"""``python -m posviz.lab``: see :mod:`posviz.lab.cli`."""

import sys

from .cli import main

sys.exit(main())
