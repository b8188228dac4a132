"""Guards: rule checks of what differs between two prompts (polarity, values, aligned swaps in contexts).

Pure functions of the two prompts over word lists loaded once (WordNet-derived antonyms, hand-written
reversals, units and named-thing categories), so one instance can serve every thread. `registry` builds them.
"""
