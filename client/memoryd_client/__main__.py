import sys

from memoryd_client.cli import main

sys.exit(main())
