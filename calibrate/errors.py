"""The error a user of ``calibrate`` sees: one line, exit code 2."""


class CalibrationError(Exception):
    """A problem the user can fix (bad option, missing device, unusable output file)."""
