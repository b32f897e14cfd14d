import sys

from ferry.bench.cli import main

sys.exit(main())
