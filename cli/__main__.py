"""``python -m cli``: the ``polyreason`` command of this checkout."""

from cli.app import main

main()
