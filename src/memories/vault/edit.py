"""Writing the vault domain: new vaults and card types, new assets, edits, tombstones and
conflict resolutions.

Every mutation is staged on one store ``Mutation`` and committed with one checkpoint, so it
lands whole or not at all; nothing is written when validation fails. Each commit notifies the
commit observers with exactly the assets it changed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memories.crypto import new_id
from memories.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.content import Content, Kind, make_content, parse_kind
from memories.vault.events import Action
from memories.vault.operations import create_vault, write_revision
from memories.vault.records import LOCAL_KEY, VaultRecord, vault_key
from memories.views.assets import Saved
from memories.views.cards import BUILTIN_CARD_TYPES, CardType, define_card_type
from memories.views.vaults import VaultInfo

__all__ = ["PROTECTED_CARD", "Editing", "Write"]

_VAULT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}")
_CONTENT_FIELDS = frozenset(
    {"title", "body", "tags", "source", "metadata", "private", "file", "secrets"}
)
PROTECTED_CARD = "protected_card"
_PROTECTED_REF = "credential_ref"
_ATTACH = (
    "protected cards and secret references are made with `memories protected-card` and "
    "`memories protect`, not with a generic put"
)


@dataclass(frozen=True, repr=False)
class Write:
    """One revision of a :meth:`Editing.write_batch`: a new asset (``new``) or an edit of the
    single head of ``asset_id``. ``content`` is already validated by the caller."""

    asset_id: str
    kind: Kind
    content: Content
    new: bool
    vault: str | None = None  # new assets only; None: the personal vault


def _keep_protected(current: Content, fields: dict[str, object]) -> None:
    """A generic edit keeps a protected card's reference and the secrets map as they are.

    A left-out credential reference is carried forward; changing either is refused.
    """
    if "secrets" in fields and fields["secrets"] != dict(current.secrets):
        raise UsageError("a generic edit cannot add, remove or retarget secret references")
    fields["secrets"] = current.secrets
    if current.card_type != PROTECTED_CARD:
        return
    metadata = fields.get("metadata")
    if not isinstance(metadata, Mapping):
        return
    kept = current.metadata.get(_PROTECTED_REF)
    given = metadata.get(_PROTECTED_REF, kept)
    if given != kept:
        raise UsageError("a generic edit cannot replace a protected card's credential reference")
    fields["metadata"] = {**metadata, _PROTECTED_REF: kept}


class Editing(VaultBase):
    """Vault, card type and asset writes."""

    def create_vault(self, name: str, *, local: bool = False) -> VaultInfo:
        """A new vault with this device's user as its owner; ``local`` keeps it on this device.

        Raises ``UsageError`` for a bad name, ``ConflictError`` if the name is taken.
        """
        name = name.strip() if isinstance(name, str) else ""
        if not _VAULT_NAME.fullmatch(name):
            raise UsageError(
                "a vault name is 1 to 64 letters, digits, spaces or . _ - (starting with a "
                "letter or digit)"
            )
        if any(r.name == name for r in self._records()):
            raise ConflictError("a vault with that name exists already")
        m = self.store.mutation()
        record = create_vault(m, self.identity, name, local=local)
        state = self._local()
        if local:
            state = replace(state, local_vaults=(*state.local_vaults, record.vault_id))
            m.put(LOCAL_KEY, state.to_bytes())
        self._commit(
            m,
            "vault.create",
            vaults=(record.vault_id,),
            policies_changed=True,
            vault=record.vault_id,
        )
        return self._info(record, state)

    def run_bindings(self) -> Mapping[str, Mapping[str, str]]:
        """This device's run bindings: program path -> variable name -> label or template."""
        return self._local().run_bindings

    def set_run_binding(self, program: str, env: Mapping[str, str] | None) -> None:
        """Bind ``program`` to ``env`` in the device-local state (None removes the binding).
        Never synchronized or exported. The caller validates names and labels.

        Raises:
            NotFoundError: ``env`` is None and the program has no binding.
        """
        state = self._local()
        bindings = dict(state.run_bindings)
        if env is None:
            if bindings.pop(program, None) is None:
                raise NotFoundError("that program has no run binding")
        else:
            bindings[program] = dict(env)
        m = self.store.mutation()
        m.put(LOCAL_KEY, replace(state, run_bindings=bindings).to_bytes())
        self._commit(m, "run.bind", program=os.path.basename(program)[:200])

    def define_card_type(
        self,
        vault: str | None,
        name: str,
        fields: Sequence[Mapping[str, object]],
        description: str = "",
    ) -> CardType:
        """Add a user-defined card type to ``vault``. Raises ``UsageError``/``ConflictError``."""
        record = self.resolve_vault(vault)
        card_type = define_card_type(name, fields, description)
        if card_type.name in record.card_types:
            raise ConflictError("that card type exists already in this vault")
        updated = replace(record, card_types={**record.card_types, card_type.name: card_type})
        m = self.store.mutation()
        m.put(vault_key(record.vault_id), updated.to_bytes())
        self._commit(m, "card_type.define", vaults=(record.vault_id,), vault=record.vault_id)
        return card_type

    # -- content -----------------------------------------------------------------------------

    def _card_type(self, record: VaultRecord, name: str | None) -> CardType | None:
        if name is None:
            return None
        found = record.card_types.get(name) or BUILTIN_CARD_TYPES.get(name)
        if found is None:
            raise UsageError("unknown card type; `memories card types` lists them")
        return found

    def _build(self, record: VaultRecord, kind: Kind, fields: Mapping[str, object]) -> Content:
        unknown = set(fields) - _CONTENT_FIELDS - {"card_type"}
        if unknown:
            raise UsageError("unknown content field: " + ", ".join(sorted(unknown)))
        card_type = fields.get("card_type")
        if card_type is not None and not isinstance(card_type, str):
            raise UsageError("the card type must be text")
        return make_content(
            kind,
            card_type_def=self._card_type(record, card_type),
            max_file_bytes=self.max_file_bytes,
            **fields,  # type: ignore[arg-type]
        )

    def put(self, vault: str | None, kind: str, **fields: object) -> Saved:
        """Create an asset of ``kind`` in ``vault`` (None: personal) from content ``fields``.

        Fields: title, body, tags, source, card_type, metadata, private, file. Raises
        ``UsageError`` for invalid content (nothing is written) and ``DeniedError`` when this
        device may not write to the vault.
        """
        kind_ = parse_kind(kind)
        if fields.get("card_type") == PROTECTED_CARD or fields.get("secrets"):
            raise UsageError(_ATTACH)
        record = self.resolve_vault(vault)
        content = self._build(record, kind_, fields)
        m = self.store.mutation()
        revision, state = write_revision(
            m,
            self.identity,
            record,
            asset_id=new_id(),
            kind=kind_,
            state=None,
            parents=(),
            content=content,
        )
        self._commit(
            m, "asset.put", [(state, revision.id)], asset=state.asset_id, revision=revision.id
        )
        return Saved(state.asset_id, revision.id, record.vault_id, state.heads)

    # -- edits -------------------------------------------------------------------------------

    def _parents_for_edit(self, state: AssetState, base: str | None, fork: bool) -> list[str]:
        if base is None:
            if state.conflicted:
                raise ConflictError(
                    f"this memory has {len(state.heads)} conflicting versions; "
                    "run `memories resolve` first"
                )
            return list(state.heads)
        base_id = self._resolve_revision(state, base)
        if base_id in state.heads and not state.conflicted:
            return [base_id]
        if fork:
            return [base_id]
        raise ConflictError(
            "the memory changed since the version you edited; re-read it, or keep both "
            "versions deliberately (fork)"
        )

    def update(
        self,
        ref: str,
        *,
        base: str | None = None,
        fork: bool = False,
        elevated: bool = False,
        **changes: object,
    ) -> Saved:
        """Append a revision with ``changes`` applied to the newest head's content.

        ``base`` is the revision the edit started from; if it is no longer the single head the
        edit is refused with ``ConflictError`` unless ``fork`` keeps both as a conflict. Raises
        ``UsageError`` for invalid content and ``DeniedError`` for private content when not
        elevated. Nothing is written on any error.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if "card_type" in changes:
            raise UsageError("a card's type cannot change; create a new card instead")
        parents = self._parents_for_edit(state, base, fork)
        start = self._content(self._revision(parents[0])) if fork else None
        return self._save(state, parents, changes, start, "asset.update")

    def _save(
        self,
        state: AssetState,
        parents: Sequence[str],
        changes: Mapping[str, object],
        start: Content | None,
        action: Action,
    ) -> Saved:
        record = self._record(state.vault_id)
        current = start or self._current_or_empty(state)
        fields: dict[str, object] = {
            "title": current.title,
            "body": current.body,
            "tags": current.tags,
            "source": current.source,
            "card_type": current.card_type,
            "metadata": dict(current.metadata) if state.kind == "card" else None,
            "private": current.private,
            "file": current.file,
        }
        fields.update(changes)
        _keep_protected(current, fields)
        content = self._build(record, state.kind, fields)
        return self._append(record, state, parents, content, action)

    def _append(
        self,
        record: VaultRecord,
        state: AssetState,
        parents: Sequence[str],
        content: Content | None,
        action: Action,
    ) -> Saved:
        """Commit one new revision (``content`` None: a tombstone) of an existing asset."""
        m = self.store.mutation()
        revision, new_state = write_revision(
            m,
            self.identity,
            record,
            asset_id=state.asset_id,
            kind=state.kind,
            state=state,
            parents=parents,
            content=content,
        )
        self._commit(
            m, action, [(new_state, revision.id)], asset=state.asset_id, revision=revision.id
        )
        return Saved(state.asset_id, revision.id, state.vault_id, new_state.heads)

    def current_content(self, ref: str) -> tuple[AssetState, Content]:
        """The live, single head of ``ref`` and its content, with nothing hidden.

        For the secret operations only: they check elevation and record their intent before
        anything of it leaves the service.

        Raises:
            NotFoundError: nothing has that id, or it is deleted.
            ConflictError: it has several heads (which value is meant is not clear).
            UsageError: the reference is ambiguous.
        """
        state = self.resolve_asset(ref)
        if state.deleted:
            raise NotFoundError("that asset was deleted")
        if state.conflicted:
            raise ConflictError("that asset has conflicting versions; resolve them first")
        content = self._content(self._revision(state.newest))
        if content is None:
            raise NotFoundError("that asset was deleted")
        return state, content

    def write_batch(
        self, writes: Sequence[Write], action: Action, details: Mapping[str, str | int]
    ) -> list[Saved]:
        """Commit every revision of ``writes`` together, with one checkpoint of ``action`` and
        ``details`` (ids and op names only, never content): all land or none do.

        For the secret operations, which write a credential and the card or memory that refers
        to it at once. Content is validated by the caller, so this is not a user-input path.

        Raises:
            ConflictError: an edited asset has several heads.
            NotFoundError, UsageError: an edited asset or a vault does not resolve, or an
                edited asset is deleted or of another kind.
        """
        m = self.store.mutation()
        changed: list[tuple[AssetState, str | None]] = []
        saved: list[Saved] = []
        for write in writes:
            if write.new:
                record = self.resolve_vault(write.vault)
                state: AssetState | None = None
                parents: tuple[str, ...] = ()
            else:
                state = self.resolve_asset(write.asset_id)
                if state.kind != write.kind or state.deleted:
                    raise UsageError("that asset is deleted or of another kind")
                if state.conflicted:
                    raise ConflictError("that asset has conflicting versions; resolve them first")
                record = self._record(state.vault_id)
                parents = state.heads
            revision, new_state = write_revision(
                m,
                self.identity,
                record,
                asset_id=write.asset_id,
                kind=write.kind,
                state=state,
                parents=parents,
                content=write.content,
            )
            changed.append((new_state, revision.id))
            saved.append(Saved(write.asset_id, revision.id, record.vault_id, new_state.heads))
        # Typed loosely: the checkpoint details are plain str/int pairs, not _commit's keywords.
        extra: dict[str, Any] = dict(details)
        self._commit(m, action, changed, **extra)
        return saved

    def _current_or_empty(self, state: AssetState) -> Content:
        """The content to start from: the newest head's, or (when that is a tombstone) the last
        live version before it."""
        content = self._content(self._revision(state.newest))
        if content is not None:
            return content
        for entry in self._walk(state):
            if not entry.tombstone:
                content = self._content(self._revision(entry.revision))
                if content is not None:
                    return content
        raise IntegrityError("an asset has no content in its history")

    def tombstone(self, ref: str, *, base: str | None = None, elevated: bool = False) -> Saved:
        """Delete from current views; history stays. Raises ``ConflictError`` when conflicted
        or stale, ``UsageError`` when already deleted."""
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if state.deleted:
            raise UsageError("that memory is already deleted")
        parents = self._parents_for_edit(state, base, fork=False)
        return self._append(self._record(state.vault_id), state, parents, None, "asset.tombstone")

    def resolve(
        self,
        ref: str,
        *,
        parents: Sequence[str] | None = None,
        elevated: bool = False,
        **changes: object,
    ) -> Saved:
        """End a conflict with a revision whose parents are all current heads.

        Content starts from the newest head (or the newest live one) with ``changes`` applied;
        ``delete=True`` in ``changes`` resolves to a tombstone. Raises ``UsageError`` when there
        is no conflict or ``parents`` omits a head or names an unknown revision.
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if not state.conflicted:
            raise UsageError("this memory has no conflict to resolve")
        if parents is not None:
            try:
                named = {self._resolve_revision(state, p) for p in parents}
            except NotFoundError:
                raise UsageError(
                    "a resolution names a version this memory does not have; "
                    "`memories conflicts` lists the current ones"
                ) from None
            missing = set(state.heads) - named
            if missing or named - set(state.heads):
                raise UsageError(
                    f"a resolution must name exactly the {len(state.heads)} current versions "
                    f"({len(missing)} missing); `memories conflicts` lists them"
                )
        delete = bool(changes.pop("delete", False))
        if delete:
            record = self._record(state.vault_id)
            return self._append(record, state, state.heads, None, "asset.resolve")
        return self._save(state, state.heads, changes, None, "asset.resolve")
