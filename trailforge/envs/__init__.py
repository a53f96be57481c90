"""Environments from repositories: discovery, snapshots, seeds, workflow graphs, tasks and their verification.

(Not empty on purpose: DVC warns on every hash of an empty dependency file, once per stage that names it.)
"""
