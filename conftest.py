"""Every test and doctest validates settings with the project's registries (``components.catalog``), as the command
line and the flows do."""

from components.catalog import install

install()
