"""Synchronization through storage the user already owns.

- ``errors``       transport errors (under ``UnavailableError``)
- ``transports/``  put/get/list of immutable objects: memory, folder, rclone
- ``objects``      content-addressed objects (revision, policy, audit) and signed descriptors
- ``queue``        the durable outbox/inbox kept in the encrypted state
- ``publish``      what this device has not published yet, staged before any transport I/O
- ``engine``       one sync pass: bounded transport I/O outside the service lock
- ``candidate``    the state a pass builds, committed in one transaction or not at all
- ``merge``        acknowledging a pass: validation of everything that arrived, the merge
- ``quarantine``   what was not merged, for local review only
"""
