import sys

from agentshark.cli import main

sys.exit(main())
