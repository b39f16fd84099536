"""From a config to trained checkpoints: set-up, the trainer, batch order, loss, optimizer, validation."""
