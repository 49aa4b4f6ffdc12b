"""Pure units: no real wheels, no Qt window, no Wine (synthetic images, real processes, real HTTPS on 127.0.0.1)."""
