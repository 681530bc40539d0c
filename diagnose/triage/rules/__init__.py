"""One module per rule, named for the bad pattern; `diagnose/triage/codes.py` lists them all."""
