"""Storage layer: run folders (eval, train), their tables, the matrix index; reading and writing only.

Imports none of the orchestration (`benchctl.evaluation`, trainers, report, CLI); they call it.
"""
