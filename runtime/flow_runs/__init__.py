"""What a Prefect flow run shows and how it runs: its artifacts, its name, its progress lines, its task runner.

``prefect_artifacts`` is the one publisher of a flow run's tables, links and markdown; ``names`` names flow runs
like their MLflow runs; ``progress`` relays stage progress into the flow run's logs; ``plans`` and ``pilots``
are the plan's refusal and the pilot's profile where flows meet them; ``task_runners`` the runner
``execution`` names.
"""
