"""IdeaTrail: ideation trajectories grounded in a literature corpus that ends at each case's cutoff date.

``corpus`` reads papers and indexes them for lexical search; ``tools`` gives one trajectory its
research tools (search, page reading, and file work in its own artifact workspace).
"""
