"""What upstream calls cost: token usage by kind (`usage`) and the per-model price table (`prices`)."""
