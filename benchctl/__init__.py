"""benchctl: compare group-relative advantage estimators for RL with verifiable rewards."""

__version__ = "0.1.0"
