"""``python -m paperlib ...``: the ``paperlib`` command, e.g. under ``torchrun -m paperlib`` or
``accelerate launch -m paperlib``."""

import sys

from paperlib.cli import main

if __name__ == "__main__":
    sys.exit(main())
