"""polyreason: the command line and the operations around it (stack, deployments, interrupts, checks)."""
