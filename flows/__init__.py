"""polyreason: flows."""
