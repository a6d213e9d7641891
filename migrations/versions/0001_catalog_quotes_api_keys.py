"""catalog, quotes, api keys

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-30 09:19:56.304050
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_prefix'), ['prefix'], unique=True)

    op.create_table('gpus',
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('vendor', sa.String(length=40), nullable=False),
    sa.Column('architecture', sa.String(length=80), nullable=False),
    sa.Column('form_factor', sa.String(length=16), nullable=False),
    sa.Column('launch_year', sa.Integer(), nullable=True),
    sa.Column('memory_gb', sa.Float(), nullable=False),
    sa.Column('memory_type', sa.String(length=60), nullable=False),
    sa.Column('memory_bandwidth_gb_s', sa.Float(), nullable=False),
    sa.Column('fp64_tflops', sa.Float(), nullable=True),
    sa.Column('fp64_tensor_tflops', sa.Float(), nullable=True),
    sa.Column('fp32_tflops', sa.Float(), nullable=True),
    sa.Column('tf32_tflops', sa.Float(), nullable=True),
    sa.Column('bf16_tflops', sa.Float(), nullable=True),
    sa.Column('fp16_tflops', sa.Float(), nullable=True),
    sa.Column('fp8_tflops', sa.Float(), nullable=True),
    sa.Column('int8_tops', sa.Float(), nullable=True),
    sa.Column('tdp_w', sa.Float(), nullable=False),
    sa.Column('interconnect', sa.String(length=20), nullable=False),
    sa.Column('interconnect_bandwidth_gb_s', sa.Float(), nullable=True),
    sa.Column('max_gpus_per_node', sa.Integer(), nullable=False),
    sa.Column('pcie_gen', sa.Integer(), nullable=True),
    sa.Column('mig_instances', sa.Integer(), nullable=False),
    sa.Column('aliases', sa.JSON(), nullable=False),
    sa.Column('source', sa.String(length=2000), nullable=False),
    sa.Column('source_date', sa.Date(), nullable=True),
    sa.Column('notes', sa.String(length=4000), nullable=False),
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gpus'))
    )
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_gpus_slug'), ['slug'], unique=True)

    op.create_table('quotes',
    sa.Column('provider', sa.String(length=40), nullable=False),
    sa.Column('region', sa.String(length=60), nullable=False),
    sa.Column('instance_type', sa.String(length=100), nullable=False),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('pricing', sa.String(length=16), nullable=False),
    sa.Column('price_usd_per_hour', sa.Float(), nullable=True),
    sa.Column('purchase_price_usd', sa.Float(), nullable=True),
    sa.Column('source', sa.String(length=2000), nullable=False),
    sa.Column('captured_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('valid_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('gpu_slug', sa.String(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['gpu_slug'], ['gpus.slug'], name=op.f('fk_quotes_gpu_slug_gpus'), onupdate='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_quotes')),
    sa.UniqueConstraint('provider', 'region', 'instance_type', 'pricing', name=op.f('uq_quotes_provider_region_instance_type_pricing'))
    )
    with op.batch_alter_table('quotes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_quotes_gpu_slug'), ['gpu_slug'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('quotes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_quotes_gpu_slug'))

    op.drop_table('quotes')
    with op.batch_alter_table('gpus', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gpus_slug'))

    op.drop_table('gpus')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_prefix'))

    op.drop_table('api_keys')
