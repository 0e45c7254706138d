"""Experiments run by the application: RL training, the papers' reproductions and studies."""
