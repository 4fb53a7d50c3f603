"""The supervisor of several front ends (``tensorgate --frontends N``): the one owner of what must
be single — flags and config, the model lifecycle, the worker pool, the front-end processes and
the drain (:mod:`gateway.supervisor.supervisor_process`)."""
