"""Model access: model descriptions, the provider seam, and the providers behind it."""
