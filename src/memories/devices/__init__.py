"""More devices and more people: pairing, bundles, membership, revocation and rotation.

::

    pairing.py     join requests, approvals (sealed envelopes) and the join itself
    bundle.py      signed vault bundles: export, complete validation, import in one commit
    audit_records.py  the signed audit records bundles carry: selection, checks, storage
    membership.py  identities of other people, sharing, roles, removal, revocation + rotation

The rules for who may change a policy live in :mod:`memories.vault.policy`; this package builds
the entries, moves them between stores and never bypasses those rules.
"""
