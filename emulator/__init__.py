"""A stand-in for the vendor's Fleet Management API and its web application.

Run it with `python -m emulator` (see README.md). Standard library only, and
nothing from `portal` or `fleet`: it signs and verifies with its own code, so
a mistake on the portal's side is caught here rather than mirrored.
"""
