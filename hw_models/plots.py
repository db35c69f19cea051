"""Topology drawings (:func:`draw_topology`, in the house style of :mod:`hw_models.report.writer`),
written whole or not at all by :func:`hw_models.report.writer.write_figure`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from noc.topology import Topology


def _router_xy(t: Topology) -> np.ndarray:
    """2-D positions for drawing each router."""
    r = t.num_routers
    if t.family in ("mesh", "torus", "hypercube") and len(t.dims) >= 2:
        c = t.router_coords.astype(float)
        xy = c[:, :2].copy()
        # Higher dimensions: offset each 2-D slice to the right/up so they do not overlap.
        for d in range(2, len(t.dims)):
            xy[:, 0] += c[:, d] * (t.dims[0] + 1) * (1 if d % 2 == 0 else 0)
            xy[:, 1] += c[:, d] * (t.dims[1] + 1) * (1 if d % 2 == 1 else 0)
        return xy
    if t.family in ("ring", "fully_connected") or (t.family in ("mesh", "torus", "hypercube")):
        ang = 2 * np.pi * np.arange(r) / max(r, 1)
        return np.stack([np.cos(ang), np.sin(ang)], axis=1) * max(1.0, r / 4)
    if t.family in ("fattree", "bigraph"):
        level = t.router_coords[:, 0].astype(float)
        idx = t.router_coords[:, 1].astype(float)
        width = max(idx.max() + 1, 1)
        return np.stack([(idx + 0.5) / width * t.num_endpoints, 2.0 + 2.0 * level], axis=1)
    return np.array([[t.num_endpoints / 2.0, 2.0]])  # single switch


def draw_topology(t: Topology, path: str | Path) -> Path:
    """Write a PNG of ``t``: routers as squares, NIs as dots, links as lines."""
    from hw_models.report.writer import figure, legend_outside, write_figure

    rxy = _router_xy(t)
    e = t.num_endpoints
    exy = np.zeros((e, 2))
    if t.family in ("fattree", "bigraph", "switch"):
        exy[:, 0] = np.arange(e) + 0.5
        exy[:, 1] = 0.0
    else:  # NIs in a small circle around their router
        for ep in range(e):
            r = t.endpoint_router[ep]
            k = ep % t.concentration
            ang = 2 * np.pi * k / t.concentration + np.pi / 4
            exy[ep] = rxy[r] + 0.25 * np.array([np.cos(ang), np.sin(ang)])
    vxy = np.concatenate([exy, rxy])
    with figure(figsize=(7, 6)) as (fig, ax):
        drawn = set()
        for s, d in zip(t.link_src.tolist(), t.link_dst.tolist()):
            key = (min(s, d), max(s, d))
            if key in drawn:
                continue
            drawn.add(key)
            (x0, y0), (x1, y1) = vxy[s], vxy[d]
            if t.wrap and s >= e and d >= e and np.hypot(x1 - x0, y1 - y0) > 1.5:
                # Wrap-around link: an arc bowing away from the grid so it does not hide the row.
                u = np.linspace(0.0, 1.0, 32)
                nx, ny = -(y1 - y0), x1 - x0
                norm = np.hypot(nx, ny)
                bow = 0.35 * np.sin(np.pi * u) * (1 if (nx + ny) <= 0 else -1)
                ax.plot(x0 + (x1 - x0) * u + bow * nx / norm, y0 + (y1 - y0) * u + bow * ny / norm,
                        color="tab:orange", lw=0.8, alpha=0.8, zorder=1)
            else:
                ax.plot([x0, x1], [y0, y1], color="0.4", lw=0.8, zorder=1)
        ax.scatter(rxy[:, 0], rxy[:, 1], marker="s", s=120, color="tab:blue", zorder=3, label="router/switch")
        ax.scatter(exy[:, 0], exy[:, 1], marker="o", s=14, color="tab:green", zorder=4, label="NI (endpoint)")
        ax.set_title(f"{t.name}: {e} NIs, {t.num_routers} routers, {t.num_links} directed links")
        ax.set_aspect("equal" if t.family not in ("fattree", "bigraph", "switch") else "auto")
        ax.axis("off")
        legend_outside(ax)
        return write_figure(fig, path)

