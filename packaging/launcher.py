"""Entry script of the frozen `voxtray` command (packaging/voxtray.spec).

PyInstaller needs a script, not a console-script entry point; this is `voxtray.entry:main`.
"""

import sys

from voxtray.entry import main

if __name__ == "__main__":
    sys.exit(main())
