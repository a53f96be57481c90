"""Releases: export, the dataset card and its HTML page, statistics, rechecks, audits and the Hub.

(Not empty on purpose: DVC warns on every hash of an empty dependency file, once per stage that names it.)
"""
