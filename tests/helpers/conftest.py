"""The start-up hooks under this folder are ``sitecustomize`` modules that a test puts on ``PYTHONPATH`` for a
child interpreter; they are not tests. ``--doctest-modules`` would import each as the top-level module
``sitecustomize``, and the second one then clashes with the first ("import file mismatch")."""

collect_ignore_glob = ["*/sitecustomize.py"]
