"""Helpers shared by the tests and the benchmarks (never by the product): real services in their own processes
(`services`), a loopback stub upstream (`stub_upstream`), an in-process gateway with a `MockTransport` upstream
(`inprocess`), waiting for a condition (`waiting`), traffic replays (`traffic`) and the headless browser (`browser`)."""
