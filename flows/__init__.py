"""polyreason: flows.

A flow's typed profile parameter is validated by Prefect, in whichever process runs the flow (the
command's, a deployment's worker), with no validation context: the project's registries are handed
to the settings for the process here, before any flow module is imported (``components.catalog``).
"""

from components.catalog import install

install()
