"""Offline evaluation of the semantic cache: threshold sweeps over labelled pairs and trace replays.

Imports `index` (the same decision rule as the gateway), never `service`.
"""
