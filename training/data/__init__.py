"""Data generators, one module per generator (`python -m training.data.<generator>`): each writes datasets/ (or
index/guards/data/) from the sources it names, seeded, so that running it again reproduces the files; beside them
`dataset_stats` and `measure_guards_public` print counts and measurements, and `intent_trace` is what the trace
generators share."""
