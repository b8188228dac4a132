"""What stops reuse: request shapes (`shape`: fingerprints of the system prompt with its volatile spans masked, of
the tool list, of the sampling parameters; never the text) and the per-namespace report read from them (`watch`)."""
