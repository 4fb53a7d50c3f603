"""What crosses between the supervisor and its front ends: framed messages with descriptors on a
Unix socket (:mod:`~gateway.ipc.link`), the registry snapshot (:mod:`~gateway.ipc.snapshot`) and
a front end's metrics as plain data (:mod:`~gateway.ipc.figures`)."""
