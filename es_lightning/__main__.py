"""``python -m es_lightning`` is the ``es-lightning`` command."""

import sys

from es_lightning.cli import main

if __name__ == "__main__":
    sys.exit(main())
