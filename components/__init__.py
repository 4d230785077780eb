"""polyreason: components."""
