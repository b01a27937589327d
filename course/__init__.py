"""The course: its steps, in one registry (course/steps.py). It imports mha_core, never the reverse."""
