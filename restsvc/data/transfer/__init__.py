"""Data in and out in bulk: export, import, and changes by filter."""
