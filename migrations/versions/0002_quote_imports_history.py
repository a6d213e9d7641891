"""quote imports and price history

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('quote_imports',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('api_key_name', sa.String(length=100), nullable=False),
    sa.Column('source', sa.String(length=2000), nullable=False),
    sa.Column('format', sa.String(length=16), nullable=False),
    sa.Column('provider', sa.String(length=40), nullable=True),
    sa.Column('captured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('rows_read', sa.Integer(), nullable=False),
    sa.Column('added', sa.Integer(), nullable=False),
    sa.Column('updated', sa.Integer(), nullable=False),
    sa.Column('unchanged', sa.Integer(), nullable=False),
    sa.Column('skipped', sa.Integer(), nullable=False),
    sa.Column('unmatched', sa.Integer(), nullable=False),
    sa.Column('duration_ms', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_quote_imports'))
    )
    op.create_table('quote_price_history',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('quote_id', sa.Integer(), nullable=False),
    sa.Column('import_id', sa.Integer(), nullable=True),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('changed_by', sa.String(length=100), nullable=False),
    sa.Column('old_price_usd_per_hour', sa.Float(), nullable=True),
    sa.Column('new_price_usd_per_hour', sa.Float(), nullable=True),
    sa.Column('old_purchase_price_usd', sa.Float(), nullable=True),
    sa.Column('new_purchase_price_usd', sa.Float(), nullable=True),
    sa.Column('old_captured_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['quote_id'], ['quotes.id'], name=op.f('fk_quote_price_history_quote_id_quotes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['import_id'], ['quote_imports.id'], name=op.f('fk_quote_price_history_import_id_quote_imports')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_quote_price_history'))
    )
    with op.batch_alter_table('quote_price_history', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_quote_price_history_quote_id'), ['quote_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_quote_price_history_import_id'), ['import_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('quote_price_history', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_quote_price_history_import_id'))
        batch_op.drop_index(batch_op.f('ix_quote_price_history_quote_id'))

    op.drop_table('quote_price_history')
    op.drop_table('quote_imports')
