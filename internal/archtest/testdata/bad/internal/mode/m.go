package mode
