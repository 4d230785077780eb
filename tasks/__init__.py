"""polyreason: tasks."""
