"""``python -m fpgashare.cli.main``: the same as the ``fpgashare`` command."""

import sys

from fpgashare.cli.main import main

sys.exit(main())
