"""The encrypted store file: header, state and checkpoints; one writer; a transaction per change."""

from memories.store.anchor import AnchorFinding
from memories.store.checkpoints import DAMAGED, GAP, UNLINKED, Checkpoint
from memories.store.create import KdfCost, create_store
from memories.store.errors import (
    HeaderChangedError,
    MalformedHeaderError,
    NewerFormatError,
    NotAStoreError,
    RollbackError,
    UnsafeKdfError,
)
from memories.store.lock import StoreLock
from memories.store.store import Mutation, Store
from memories.store.verify import StoreProblem

__all__ = [
    "DAMAGED",
    "GAP",
    "UNLINKED",
    "AnchorFinding",
    "Checkpoint",
    "HeaderChangedError",
    "KdfCost",
    "MalformedHeaderError",
    "Mutation",
    "NewerFormatError",
    "NotAStoreError",
    "RollbackError",
    "Store",
    "StoreLock",
    "StoreProblem",
    "UnsafeKdfError",
    "create_store",
]
