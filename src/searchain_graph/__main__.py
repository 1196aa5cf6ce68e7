"""``python -m searchain_graph``: the ``searchain`` command."""

import sys

from searchain_graph.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
