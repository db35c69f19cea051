"""The named experiment configs (``--preset NAME``), one ``NAME.toml`` each in this folder
(:func:`hw_models.config.preset_path`). Light to import: the commands' help reads
:data:`PRESETS`."""

PRESETS = ("isca2021", "isca2021_mesh")
