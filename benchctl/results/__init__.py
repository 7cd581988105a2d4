"""Result files of `benchctl eval` / `benchctl grade`: run-dir layout, tables, reports, resume."""
