"""Let the tests run from a checkout as well as after ``pip install -e examples/plugin``:
the package's directory goes on ``sys.path``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
