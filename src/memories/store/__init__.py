"""The encrypted store file: header, state and checkpoints; one writer; a transaction per change."""

from memories.store.checkpoints import Checkpoint
from memories.store.create import KdfCost, create_store
from memories.store.lock import StoreLock
from memories.store.store import Mutation, Store

__all__ = ["Checkpoint", "KdfCost", "Mutation", "Store", "StoreLock", "create_store"]
