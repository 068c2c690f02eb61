"""`python -m mpsched` is the `mpsched` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
