"""``python -m gateway.client``: see :mod:`gateway.client.cli`."""

import sys

from gateway.client.cli import main

sys.exit(main())
