"""Helpers every room uses: input checks, human units, compiling, plotting, sizes."""
