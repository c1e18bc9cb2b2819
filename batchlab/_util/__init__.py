"""Helpers every room uses: input checks, human units, compiling, plotting, notebook sizes.

Public inside the package (any room may import ``batchlab._util.<module>``);
not part of the kit's public face except what ``batchlab`` re-exports.
"""
