"""The portal's views, one module per area."""
