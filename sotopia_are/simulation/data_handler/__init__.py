"""ARE's scenario JSON format: models, reading, importing into and exporting from the kernel."""

__all__: list[str] = []
