"""The `trailforge` command line (main.py)."""
