"""polyreason: components/training."""
