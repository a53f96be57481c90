"""Agent rollouts in exported environments: the tool-calling harness and episode sampling.

(Not empty on purpose: DVC warns on every hash of an empty dependency file, once per stage that names it.)
"""
