"""``python -m lab``: the ``recourse-abm`` command line."""

from lab.cli import main

if __name__ == "__main__":
    main()
