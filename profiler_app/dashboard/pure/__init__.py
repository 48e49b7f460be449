"""The Dashboard's computations over event arrays, without Django."""
