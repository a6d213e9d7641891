"""gpus: SM/CU count, boost and base clocks, L2 cache, tensor-core generation

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 15:00:00

Adds five nullable columns and fills them for the seed GPUs already in the table (a database
seeded before this revision would otherwise keep them null: ``seed`` skips a non-empty
catalog). Only rows whose new columns are all still null are filled, each such update bumps
``version`` like any other write, and rows an admin added under other slugs stay null.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (
    ("sm_count", sa.Integer()),
    ("boost_clock_mhz", sa.Float()),
    ("base_clock_mhz", sa.Float()),
    ("l2_cache_mb", sa.Float()),
    ("tensor_core_generation", sa.Integer()),
)

# slug: (sm_count, boost_clock_mhz, base_clock_mhz, l2_cache_mb, tensor_core_generation), as
# in service/data/gpus.csv at this revision (see the source and notes columns there). Frozen
# here on purpose: a migration must not change meaning when the seed file changes later.
_SEED_FIGURES: dict[str, tuple[int, float, float, float, int]] = {
    "nvidia-h100-sxm5-80gb": (132, 1980.0, 1590.0, 50.0, 4),
    "nvidia-h100-pcie-80gb": (114, 1755.0, 1125.0, 50.0, 4),
    "nvidia-h200-sxm-141gb": (132, 1980.0, 1590.0, 50.0, 4),
    "nvidia-a100-sxm4-80gb": (108, 1410.0, 1275.0, 40.0, 3),
    "nvidia-a100-pcie-40gb": (108, 1410.0, 765.0, 40.0, 3),
    "nvidia-l40s": (142, 2520.0, 1110.0, 96.0, 4),
    "nvidia-l4": (58, 2040.0, 795.0, 48.0, 4),
    "nvidia-t4": (40, 1590.0, 585.0, 4.0, 2),
    "nvidia-a10g": (80, 1710.0, 885.0, 6.0, 3),
    "nvidia-a10": (72, 1695.0, 885.0, 6.0, 3),
    "nvidia-v100-sxm2": (80, 1530.0, 1290.0, 6.0, 1),
    "nvidia-rtx-a6000": (84, 1800.0, 1410.0, 6.0, 3),
    "nvidia-rtx-a4000": (48, 1560.0, 735.0, 4.0, 3),
    "nvidia-rtx-4000-ada": (48, 2175.0, 1500.0, 48.0, 4),
    "nvidia-quadro-p6000": (30, 1560.0, 1506.0, 3.0, 0),
    "nvidia-rtx-4090": (128, 2520.0, 2235.0, 72.0, 4),
    "nvidia-b200-hgx": (148, 1965.0, 1665.0, 126.0, 5),
    "amd-mi300x": (304, 2100.0, 1000.0, 32.0, 3),
    "nvidia-jetson-agx-orin-64gb": (16, 1300.0, 816.0, 4.0, 3),
    "nvidia-a100-sxm4-40gb": (108, 1410.0, 1095.0, 40.0, 3),
    "nvidia-a100-pcie-80gb": (108, 1410.0, 1065.0, 40.0, 3),
    "nvidia-v100-pcie-16gb": (80, 1380.0, 1245.0, 6.0, 1),
    "nvidia-v100-sxm2-16gb": (80, 1530.0, 1312.0, 6.0, 1),
    "nvidia-h100-nvl-94gb": (132, 1785.0, 1080.0, 50.0, 4),
    "nvidia-gh200-96gb": (132, 1980.0, 1590.0, 50.0, 4),
    "nvidia-rtx-6000-ada": (142, 2505.0, 915.0, 96.0, 4),
    "nvidia-l40": (142, 2490.0, 735.0, 96.0, 4),
    "nvidia-a40": (84, 1740.0, 1305.0, 6.0, 3),
    "nvidia-rtx-3090": (82, 1695.0, 1395.0, 6.0, 3),
    "nvidia-quadro-rtx-8000": (72, 1770.0, 1395.0, 6.0, 2),
    "nvidia-quadro-rtx-6000": (72, 1770.0, 1440.0, 6.0, 2),
    "amd-mi250x": (220, 1700.0, 1000.0, 16.0, 2),
    "nvidia-jetson-orin-nx-16gb": (8, 918.0, 408.0, 2.0, 3),
}


def upgrade() -> None:
    with op.batch_alter_table("gpus", schema=None) as batch_op:
        for name, type_ in _COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=True))

    gpus = sa.table(
        "gpus",
        sa.column("slug", sa.String()),
        sa.column("version", sa.Integer()),
        sa.column("updated_at", sa.DateTime(timezone=True)),
        *(sa.column(name, type_) for name, type_ in _COLUMNS),
    )
    now = datetime.now(UTC)
    for slug, figures in _SEED_FIGURES.items():
        op.execute(
            gpus.update()
            .where(gpus.c.slug == slug, *(gpus.c[name].is_(None) for name, _ in _COLUMNS))
            .values(
                **dict(zip((name for name, _ in _COLUMNS), figures, strict=True)),
                version=gpus.c.version + 1,
                updated_at=now,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("gpus", schema=None) as batch_op:
        for name, _ in reversed(_COLUMNS):
            batch_op.drop_column(name)
