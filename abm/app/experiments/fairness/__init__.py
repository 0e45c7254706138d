"""The SCARF synthetic reproduction (long-term fairness): :mod:`.reproduce`."""
