"""ReFrame tests of node memory bandwidth, with references from a membw
baseline file instead of numbers kept by hand per partition.

    reframe -C settings.py -c membw_check.py -r \
        -S baseline=/etc/membw/baseline.json

Variables (`-S NAME=VALUE`):
  membw      the membw binary (default: membw on PATH)
  baseline   the baseline file (`membw baseline -o FILE` on a node you trust)
  tolerance  how far below the baseline's median round a rate may fall (0.1)
  extra      more membw arguments, comma-separated (`-S extra=--budget,40s`)
"""

import json

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import performance_function, run_before, sanity_function, variable


def node_scope(path):
    """The baseline's whole-node scope: its size and each kernel's rates."""
    with open(path) as f:
        baseline = json.load(f)
    if baseline.get("kind") != "membw-baseline":
        raise ValueError(f"{path}: not a membw baseline")
    for scope in baseline["scopes"]:
        if scope["scope"] == "node":
            return baseline, scope
    raise ValueError(f"{path}: no node scope")


class MembwTest(rfm.RunOnlyRegressionTest):
    """What both tests take: the binary, the baseline, the tolerance."""

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    membw = variable(str, value="membw")
    baseline = variable(str, value="baseline.json")
    tolerance = variable(float, value=0.1)
    extra = variable(typ.List[str], value=[])
    num_tasks = 1


@rfm.simple_test
class MembwNodeBandwidth(MembwTest):
    """`membw run` on the node, as the baseline measured it, each kernel's
    best rate held against the baseline's median round."""

    descr = "membw run against a membw baseline"

    @run_before("run")
    def measure_as_the_baseline_did(self):
        baseline, node = node_scope(self.baseline)
        self.kernels = list(node["kernels"])
        self.executable = self.membw
        self.executable_opts = [
            "run",
            "--format", "csv",
            "--kernels", ",".join(self.kernels),
            "--size", str(node["elements"]),
            "--ntimes", str(baseline["protocol"]["ntimes"]),
            *self.extra,
        ]
        self.reference = {
            "*": {
                kernel: (rates["median_gb_s"], -self.tolerance, None, "GB/s")
                for kernel, rates in node["kernels"].items()
            }
        }
        self.perf_variables = {
            kernel: self.rate(kernel) for kernel in self.kernels
        }

    def rate(self, kernel):
        # CSV: schema_version,hostname,kernel,best_rate_mb_s,...,validated
        mb_s = sn.extractsingle(
            rf"^\d+,[^,]*,{kernel},([0-9.]+),", self.stdout, 1, float
        )
        return sn.make_performance_function(mb_s / 1000.0, "GB/s")

    @sanity_function
    def validated(self):
        # kernel, 12 columns, validated, trusted (empty when not watched),
        # then the target (cpu, program or device; absent before it existed).
        row = r"^\d+,[^,]*,(\w+),(?:[^,]*,){12}(true|false),(true|false)?(?:,\w*)?$"
        rows = sn.extractall(row, self.stdout)
        return sn.all([
            sn.assert_eq(sn.count(rows), len(self.kernels)),
            sn.assert_not_found(r"^\d+,[^,]*,\w+,(?:[^,]*,){12}false,", self.stdout),
        ])


@rfm.simple_test
class MembwCheck(MembwTest):
    """`membw check --baseline`: the node and each NUMA domain, with its
    exit code as the verdict (0 healthy)."""

    descr = "membw check against a membw baseline"

    @run_before("run")
    def check(self):
        self.executable = self.membw
        self.executable_opts = [
            "check",
            "--baseline", self.baseline,
            "--tolerance", str(self.tolerance),
            "--format", "json",
            *self.extra,
        ]

    @sanity_function
    def healthy(self):
        return sn.assert_found(r'"healthy": true', self.stdout)
