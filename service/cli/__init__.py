"""The `gpu-advisor` command (the console script names ``service.cli:main``)."""

from service.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
