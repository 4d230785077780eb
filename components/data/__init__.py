"""polyreason: components/data."""
