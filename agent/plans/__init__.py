"""Plans: what a stage will cost before it starts, worked out from what the box already knows."""
