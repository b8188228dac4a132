"""Training recipes, one module per recipe (`python -m training.<recipe>`): each reads public data in place, fits
what `index/` ships, and records the pairs it used and the time it took beside the artifact."""
