"""polyreason: the command line and the operations around it (stack, deployments, interrupts, checks).

Every command validates profiles and registry names with the project's registries, handed to the
settings here, before any command module runs (``components.catalog``).
"""

from components.catalog import install

install()
