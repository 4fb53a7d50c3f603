"""``python -m gateway.frontend ...``: one front-end process (arguments and start-up in
:mod:`gateway.frontend.bootstrap`)."""

import sys

from gateway.frontend.bootstrap import main

if __name__ == "__main__":
    sys.exit(main())
