"""Per-node-shape settings of the Kubernetes overlays, derived by rule, never hand-typed.

``python deploy/k8s/shapes.py`` (or ``make k8s-overlays``) rewrites ``deploy/k8s/overlays/<shape>/``
for the load-testing seed's four GKE node shapes and an arm64 one; a test checks that the committed
overlays equal what this script writes. ``python deploy/k8s/shapes.py --table`` prints the derived
settings.

The rule, for a node of ``vcpus`` CPUs and ``memory_gib`` GiB (one tensorgate pod per node):

1. Allocatable = capacity minus GKE's node reservations (kubelet and system: CPU 6 % of the first
   core, 1 % of the second, 0.5 % of cores 3-4, 0.25 % above; memory 25 % of the first 4 GiB, 20 %
   of the next 4, 10 % of the next 8, 6 % of the next 112, 2 % above, plus a 100 MiB eviction
   threshold), minus an allowance for the node's DaemonSets (kube-proxy, logging and metrics
   agents: 300 mCPU, 400 MiB).
2. The pod takes the rest, rounded down (100 mCPU, 64 MiB), with requests equal to limits
   (Guaranteed QoS): the CPU limit is the quota the gateway reads (``available_cpus``) and no
   neighbour can take the cores the workers count on.
3. Workers: one single-threaded worker per whole CPU left after 0.5 CPU for the front ends
   (gRPC/REST, batching, encoding), at least one; intra-op and inter-op threads 1 — several
   one-thread processes beat one multi-threaded process on the same cores (DESIGN.md §10). So
   ``workers x intra_op`` never exceeds the CPU limit.
4. Front ends (``--frontends``): one per CPU of the limit, rounded up, at most 8 — one event loop
   uses one core at most, and a small model's request costs its front end several times what it
   costs its worker; a front end idles, costing only its memory, when the model's runs dominate.
   The CPU limit rounded down would give ``--frontends=0`` one front end on the 1.6-CPU pod of a
   2-vCPU node, hence the flag. Front ends and workers share the cores: the kernel balances them.
5. Shared-memory arena: each (front end, worker) pair has a channel, and so does the supervisor
   (warmup runs) with each worker, each with an input and an output area of
   ``--worker_arena_mb``; all of them together may use a third of the pod's memory, per area the
   largest power of two that fits, between 32 MiB (a batch of 32 ResNet50 images is 19 MB) and
   1 GiB. The areas are anonymous memfd segments, not files in ``/dev/shm``, so the container's
   64 MiB ``/dev/shm`` does not bound them and no ``emptyDir: {medium: Memory}`` is needed; their
   pages count against the pod's memory limit (a worker's output area, a ring, is touched whole
   over time), which this budget leaves room for with the processes' own memory
   (:func:`derive` checks it).
6. Replicas: the autoscaler keeps at least one pod per node of the pool and may double that (pods
   beyond the node count wait for the cluster autoscaler to add nodes of this shape).
7. Autoscaling on queue depth: the signal is ``tensorgate_requests_in_flight`` summed per pod (calls
   waiting in a batch queue, running and being encoded), with a target of
   ``QUEUE_TARGET_PER_WORKER`` calls per worker: one batch running on each worker and one waiting
   behind it — past that, an added call only waits (deploy/README.md: choosing the target from the
   bench's figures). CPU above 70 % scales too (the HPA takes the larger of the two). Two
   renderings per shape: ``<shape>/``, a HorizontalPodAutoscaler reading the per-pod metric
   through prometheus-adapter (its rule: ``deploy/observability/prometheus-adapter/``), and
   ``<shape>-keda/``, the same decision as a KEDA ScaledObject with a Prometheus trigger (KEDA
   then owns the HPA: the overlay deletes the base's).
8. Architecture: the image is one tag for amd64 and arm64 (a manifest list; each node pulls its
   own), so the same rule sizes both, and every pod tolerates the ``kubernetes.io/arch=arm64:
   NoSchedule`` taint GKE puts on Arm nodes (elsewhere it changes nothing): a Deployment runs on
   mixed-architecture pools as they are. An arm64 shape's pods select arm64 nodes
   (``nodeSelector``), the ones it is sized for; the amd64 shapes select none, as they select no
   machine type.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

OVERLAYS = Path(__file__).resolve().parent / "overlays"

DAEMONSET_MILLICPU = 300
DAEMONSET_MIB = 400
EVICTION_MIB = 100
GATEWAY_CPU = 0.5
MAX_FRONTENDS = 8
ARENA_SHARE = 1 / 3
ARENA_MIN_MIB, ARENA_MAX_MIB = 32, 1024
SUPERVISOR_BASE_MIB = 150
"""Resident memory of the supervisor (idle measures ~80 MB; it serves no traffic)."""
FRONTEND_BASE_MIB = 200
"""Resident memory of one front end under traffic (idle measures ~85 MB)."""
WORKER_BASE_MIB = 300
"""Resident memory of one idle worker (Python, numpy, ONNX Runtime) before any model."""

QUEUE_TARGET_PER_WORKER = 2
"""Calls waiting and in flight per worker that the autoscalers aim at (rule 7)."""
QUEUE_METRIC = "tensorgate_requests_in_flight"
PROMETHEUS_URL = "http://prometheus-server.monitoring.svc.cluster.local"
"""Where KEDA's trigger asks (the prometheus-community chart's Service): edit for another."""

HEADER = (
    "# Generated by deploy/k8s/shapes.py (make k8s-overlays): edit the rule there, not this file.\n"
)


@dataclass(frozen=True)
class NodeShape:
    """A node pool: ``nodes`` nodes of ``vcpus`` CPUs, ``memory_gib``, of the CPU architecture
    ``arch`` (Kubernetes' ``kubernetes.io/arch``)."""

    vcpus: int
    memory_gib: int
    nodes: int
    arch: str = "amd64"

    @property
    def name(self) -> str:
        suffix = "" if self.arch == "amd64" else f"-{self.arch}"
        return f"{self.vcpus}cpu-{self.memory_gib}gb-x{self.nodes}{suffix}"


SHAPES = (
    NodeShape(2, 4, 8),
    NodeShape(4, 8, 4),
    # Arm nodes of 4 vCPU / 16 GB: GKE's t2a-standard-4 and c4a-standard-4, EC2's m7g.xlarge.
    NodeShape(4, 16, 4, "arm64"),
    NodeShape(8, 16, 2),
    NodeShape(8, 64, 2),
)


@dataclass(frozen=True)
class PodSettings:
    """What one shape's overlay sets: resources (requests = limits), flags and replicas."""

    shape: NodeShape
    millicpu: int
    memory_mib: int
    workers: int
    frontends: int
    intra_op: int
    inter_op: int
    arena_mib: int
    min_replicas: int
    max_replicas: int

    @property
    def queue_target(self) -> int:
        """Calls waiting and in flight per pod that the autoscalers aim at (rule 7)."""
        return QUEUE_TARGET_PER_WORKER * self.workers


def _tiered(total: float, tiers: tuple[tuple[float, float], ...], rest: float) -> float:
    """Sum of ``rate x amount`` over consecutive tiers ``(amount, rate)``, then ``rest`` rate."""
    reserved, left = 0.0, total
    for amount, rate in tiers:
        step = min(left, amount)
        reserved += step * rate
        left -= step
    return reserved + left * rest


def reserved_millicpu(vcpus: int) -> float:
    """GKE's CPU reservation for a node of ``vcpus`` cores, in mCPU."""
    return 1000 * _tiered(vcpus, ((1, 0.06), (1, 0.01), (2, 0.005)), 0.0025)


def reserved_mib(memory_gib: int) -> float:
    """GKE's memory reservation (without the eviction threshold) for ``memory_gib``, in MiB."""
    return 1024 * _tiered(memory_gib, ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06)), 0.02)


def derive(shape: NodeShape) -> PodSettings:
    """The overlay's settings for ``shape`` (the rule in the module docstring)."""
    millicpu = shape.vcpus * 1000 - reserved_millicpu(shape.vcpus) - DAEMONSET_MILLICPU
    millicpu = int(millicpu // 100 * 100)
    memory = shape.memory_gib * 1024 - reserved_mib(shape.memory_gib) - EVICTION_MIB
    memory_mib = int((memory - DAEMONSET_MIB) // 64 * 64)
    workers = max(1, math.floor(millicpu / 1000 - GATEWAY_CPU))
    frontends = min(MAX_FRONTENDS, math.ceil(millicpu / 1000))
    channels = workers * (frontends + 1)
    per_area = memory_mib * ARENA_SHARE / (2 * channels)
    arena = 2 ** math.floor(math.log2(per_area))
    arena_mib = min(ARENA_MAX_MIB, max(ARENA_MIN_MIB, arena))
    processes = SUPERVISOR_BASE_MIB + frontends * FRONTEND_BASE_MIB + workers * WORKER_BASE_MIB
    needed = processes + channels * 2 * arena_mib
    if needed > memory_mib:
        raise ValueError(f"{shape.name}: {needed} MiB needed before any model, {memory_mib} MiB")
    if workers > millicpu // 1000:
        raise ValueError(f"{shape.name}: {workers} workers on {millicpu} mCPU")
    return PodSettings(
        shape,
        millicpu,
        memory_mib,
        workers,
        frontends,
        1,
        1,
        arena_mib,
        shape.nodes,
        2 * shape.nodes,
    )


def _cpu(millicpu: int) -> str:
    return f"{millicpu // 1000}" if millicpu % 1000 == 0 else f"{millicpu}m"


def overlay_files(s: PodSettings) -> dict[str, str]:
    """File name → text of the overlay directory for ``s``."""
    shape = s.shape
    arch = "" if shape.arch == "amd64" else f" {shape.arch}"
    title = f"# {shape.vcpus} vCPU / {shape.memory_gib} GB{arch} nodes x {shape.nodes}: "
    title += "one pod per node."
    nodes_patch = "  - path: nodes.yaml\n" if arch else ""
    kustomization = f"""{HEADER}{title}
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
patches:
  - path: resources.yaml
{nodes_patch}  - path: autoscaling.yaml
  - path: flags.yaml
    target:
      kind: Deployment
      name: tensorgate
"""
    resources = f"""{HEADER}apiVersion: apps/v1
kind: Deployment
metadata:
  name: tensorgate
spec:
  template:
    spec:
      containers:
        - name: tensorgate
          resources:
            requests:
              cpu: "{_cpu(s.millicpu)}"
              memory: "{s.memory_mib}Mi"
            limits:
              cpu: "{_cpu(s.millicpu)}"
              memory: "{s.memory_mib}Mi"
"""
    autoscaling = f"""{HEADER}apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: tensorgate
spec:
  minReplicas: {s.min_replicas}
  maxReplicas: {s.max_replicas}
  metrics:
    # Calls waiting and in flight per pod, served by prometheus-adapter (rule 7).
    - type: Pods
      pods:
        metric:
          name: {QUEUE_METRIC}
        target:
          type: AverageValue
          averageValue: "{s.queue_target}"
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 70
"""
    flag_values = (
        f"--workers={s.workers}",
        f"--frontends={s.frontends}",
        f"--tensorflow_intra_op_parallelism={s.intra_op}",
        f"--tensorflow_inter_op_parallelism={s.inter_op}",
        f"--worker_arena_mb={s.arena_mib}",
    )
    flags = HEADER + "".join(
        f"- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: {v}\n"
        for v in flag_values
    )
    files = {
        "kustomization.yaml": kustomization,
        "resources.yaml": resources,
        "autoscaling.yaml": autoscaling,
        "flags.yaml": flags,
    }
    if arch:
        files["nodes.yaml"] = f"""{HEADER}apiVersion: apps/v1
kind: Deployment
metadata:
  name: tensorgate
spec:
  template:
    spec:
      # The nodes this shape is sized for (rule 8); the image tag is the same on every node.
      nodeSelector:
        kubernetes.io/arch: {shape.arch}
"""
    return files


def keda_query() -> str:
    """The KEDA trigger's PromQL: calls waiting and in flight over the Deployment's pods (the
    pods' ``app.kubernetes.io/name`` label, as the usual kubernetes-pods scrape job maps it)."""
    return f'sum({QUEUE_METRIC}{{app_kubernetes_io_name="tensorgate"}})'


def keda_overlay_files(s: PodSettings) -> dict[str, str]:
    """File name → text of ``<shape>-keda/``: the shape's overlay with a KEDA ScaledObject in
    place of the HorizontalPodAutoscaler (rule 7)."""
    shape = s.shape
    kustomization = f"""{HEADER}# {shape.name}, autoscaled by KEDA 2.x on queue depth.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../{shape.name}
  - scaledobject.yaml
patches:
  - patch: |-
      $patch: delete
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: tensorgate
"""
    scaledobject = f"""{HEADER}apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: tensorgate
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: tensorgate
  minReplicaCount: {s.min_replicas}
  maxReplicaCount: {s.max_replicas}
  pollingInterval: 15
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown:
          stabilizationWindowSeconds: 300
  triggers:
    # Desired pods = the query's value / threshold: {QUEUE_TARGET_PER_WORKER} calls per worker.
    - type: prometheus
      metricType: AverageValue
      metadata:
        serverAddress: {PROMETHEUS_URL}
        query: '{keda_query()}'
        threshold: "{s.queue_target}"
    - type: cpu
      metricType: Utilization
      metadata:
        value: "70"
"""
    return {"kustomization.yaml": kustomization, "scaledobject.yaml": scaledobject}


def write_overlays(root: Path = OVERLAYS) -> list[Path]:
    """Write every shape's overlay under ``root``; the paths written."""
    written = []
    for shape in SHAPES:
        settings = derive(shape)
        for directory, files in (
            (root / shape.name, overlay_files(settings)),
            (root / f"{shape.name}-keda", keda_overlay_files(settings)),
        ):
            directory.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (directory / name).write_text(text)
                written.append(directory / name)
    return written


def table() -> str:
    """The derived settings as a Markdown table (deploy/README.md quotes it)."""
    rows = [
        "| overlay | nodes | CPU request = limit | memory request = limit | --workers | "
        "--frontends | intra/inter-op threads | --worker_arena_mb | HPA min-max | "
        "calls in flight per pod (target) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shape in SHAPES:
        s = derive(shape)
        rows.append(
            f"| `{shape.name}` | {shape.nodes} x {shape.vcpus} vCPU / {shape.memory_gib} GB"
            f"{'' if shape.arch == 'amd64' else ' ' + shape.arch} | "
            f"{_cpu(s.millicpu)} | {s.memory_mib}Mi | {s.workers} | {s.frontends} | "
            f"{s.intra_op}/{s.inter_op} | "
            f"{s.arena_mib} | {s.min_replicas}-{s.max_replicas} | {s.queue_target} |"
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the derived settings")
    args = parser.parse_args(argv)
    if args.table:
        sys.stdout.write(table())
    else:
        for path in write_overlays():
            sys.stdout.write(f"wrote {path.relative_to(OVERLAYS.parent.parent.parent)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
