"""Thin DVC stage entry points: `python -m stages.<name>`; paths come from dvc.yaml."""
