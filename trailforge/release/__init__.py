"""Releases: export, dataset card, report, statistics, recheck, audits and the Hub (publish, fetch).

(Not empty on purpose: DVC warns on every hash of an empty dependency file, once per stage that names it.)
"""
