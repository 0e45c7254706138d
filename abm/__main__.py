"""``python -m abm``: the ``recourse-abm`` command line."""

from abm.app.cli import main

if __name__ == "__main__":
    main()
