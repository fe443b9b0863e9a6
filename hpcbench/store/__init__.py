"""The campaign store: campaign.h5 (columnar tables, store schema 2), written
only by `collect`; scorings live beside it in scores/<id>.h5 (hpcbench.store.scorings)
and never rewrite it. See docs/store.md for every table and column."""

from hpcbench.store.collect import collect
from hpcbench.store.layout import SCHEMA_VERSION
from hpcbench.store.read import StoredCampaign, StoredSubmission, open_store, read_campaign, read_petsc_api, tables

__all__ = ["SCHEMA_VERSION", "StoredCampaign", "StoredSubmission", "collect", "open_store", "read_campaign",
           "read_petsc_api", "tables"]
