"""Synchronization through storage the user already owns.

- ``errors``       transport errors (under ``UnavailableError``)
- ``transports/``  put/get/list of immutable objects: memory, folder, rclone
- ``objects``      content-addressed objects and signed descriptors
- ``queue``        the durable outbox/inbox kept in the encrypted state
- ``engine``       one sync pass: bounded transport I/O outside the service lock
"""
