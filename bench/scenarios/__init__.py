"""The scenarios of a run; each fills ``bench.results["scenarios"][<name>]``
(:func:`bench.scenarios.run.run_scenario` runs one by name).

- ``limits``: raw ONNX Runtime — the MLP's single-run time and ResNet50's throughput per
  configuration (processes × threads × batch), interleaved in rounds.
- ``tiny``: the MLP on one server core (client on the other): saturating throughput (h2load when
  installed, else the Python generator) of tensorgate (gRPC, batching off and on, REST), the echo
  ceiling, Triton (gRPC, HTTP), KServe (gRPC, REST) and the plan's FastAPI and MLServer peers;
  light load (concurrency 1), and a closed-loop concurrency sweep.
- ``tiny-2core``: the same saturation comparison with two server workers on both cores.
- ``resnet50``: tensorgate and Triton against the raw-runtime limit (interleaved together).
- ``overload``: open-loop rate sweeps past capacity (MLP on one core, ResNet50 on two).
- ``ramp``: the load-testing seed's ramp (users added at a fixed pace, then a plateau) with
  per-second RPS and latency percentiles.
- ``batching``: batching off vs on; ``tracing``: tracing off vs sample ratio 0 and 1.0.
- ``idle-rss``: the gateway's resident memory at idle serving the demo model.
- ``soak`` / ``chaos``: minutes of steady load (failures, RSS and fds over time), and load while a
  worker is SIGKILLed every few seconds (goodput, failures).
- ``seeds``: the load-testing seeds' own experiment, their tool (Locust) and ramp, ResNet50 over
  REST against tensorgate and the seeds' FastAPI server (:mod:`bench.scenarios.seeds`).
"""
