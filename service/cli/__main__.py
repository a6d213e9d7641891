"""``python -m service.cli``: the `gpu-advisor` command."""

from service.cli.main import main

raise SystemExit(main())
