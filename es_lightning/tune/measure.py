"""Kept for trial commands written before the measure moved: :mod:`es_lightning.report.measure`."""

import sys

from es_lightning.report.measure import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
