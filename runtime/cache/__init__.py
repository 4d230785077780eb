"""Cache keys that tell the truth: what decides a task's output, read from its inputs, its code and its files.

``policy`` is the Prefect cache policy every cached task uses; ``task_code`` the code a task runs (over
``import_graph``, which the layering tests read too), ``file_inputs`` the files it reads by content (over
``settings_walk``), ``hub_revisions`` and ``server_libraries`` the hub commits and another interpreter's
libraries a key pins; ``report`` says on a stage's MLflow run whether its cache was hit, and why not.
"""
