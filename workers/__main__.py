"""``python -m workers ...``: one worker process (arguments and start-up in
:mod:`workers.bootstrap`)."""

import sys

from workers.bootstrap import main

if __name__ == "__main__":
    sys.exit(main())
