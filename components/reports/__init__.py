"""What a person reads about runs: one benchmark's report, models compared, a run held against its paper.

* ``benchmark``: one benchmark's scores as MLflow metrics, a language table, failed lines and a plot;
* ``comparison`` (its headline: ``comparison_headline``; its plot's labels: ``plot_labels``): models side
  by side, paired deltas to a baseline with their intervals;
* ``run_tables``: a run's metrics per language and the recipe's and nightly's summaries, as tables and
  markdown (the flows hand them to Prefect as artifacts);
* ``paper_tables`` and ``paper_comparison``: a paper's printed rows, and a run held against them.

None of them computes a metric (``components.metrics`` does) or imports Prefect or MLflow.
"""
