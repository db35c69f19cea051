"""Figure saving: every matplotlib figure of ours is written whole or not at all."""

from __future__ import annotations

from pathlib import Path

from noc.base.files import replace_atomically


def save_figure(fig, path: str | Path, **savefig_kw) -> Path:
    """Write matplotlib figure ``fig`` to ``path`` whole or not at all (a temporary file of a
    unique name in the same directory, renamed over ``path``; :func:`noc.base.files.replace_atomically`).
    The format is ``path``'s suffix (default png); ``savefig_kw`` default to dpi 120 and a
    tight bounding box."""
    out = Path(path)
    kw = {"dpi": 120, "bbox_inches": "tight", "format": out.suffix.lstrip(".").lower() or "png", **savefig_kw}
    return replace_atomically(out, lambda tmp: fig.savefig(tmp, **kw))
